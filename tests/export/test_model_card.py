"""The model card (export/cards/model_card.py) and the hub packages
(export/packaging.py) of an export.

A card a hub accepts as is: Hugging Face front matter (with `model-index`),
the sections a hub expects, no path of the exporting machine in the card,
`export_info.json` or any JSON of a package, an import credited to its
source, and Kaggle metadata holding what the kaggle client requires.
"""
import json
import os
import re
import tarfile

import numpy as np
import pytest
import yaml

import cmlm.export  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf

from cmlm.commands import export as export_command
from cmlm.evaluation import tasks
from cmlm.inference import run_facts
from cmlm.experiments import registry_imports  # noqa: F401  (cmlm/en_base)
from cmlm.export import exporter
from cmlm.export import packaging
from cmlm.export.cards import card_facts
from cmlm.export.cards import model_card
from cmlm.inference import layout
from cmlm.inference import run_record
from cmlm.training import import_run
from cmlm.training import run_dir
from tests.export import export_helpers
from tests.training import import_helpers

# What the kaggle client (kaggle 2.2.5 from PyPI, kagglesdk 0.1.38;
# kaggle/api/kaggle_api_extended.py) requires on create, checked offline:
# `model_create_new` reads these with get_or_fail, refuses the
# INSERT_..._HERE defaults, checks slug syntax and that isPrivate is a bool;
# `model_instance_create` reads its own with get_or_fail, refuses an empty
# licenseName and the defaults, wants fineTunable a bool and trainingData a
# list, and resolves framework and modelInstanceType by kagglesdk's enums.
KAGGLE_MODEL_REQUIRED = ("ownerSlug", "slug", "title", "isPrivate",
                         "description")
KAGGLE_INSTANCE_REQUIRED = ("ownerSlug", "modelSlug", "instanceSlug",
                            "framework", "licenseName")
KAGGLE_DEFAULTS = {"title": "INSERT_TITLE_HERE", "slug": "INSERT_SLUG_HERE",
                   "modelSlug": "INSERT_EXISTING_MODEL_SLUG_HERE",
                   "instanceSlug": "INSERT_INSTANCE_SLUG_HERE",
                   "framework": "INSERT_FRAMEWORK_HERE"}
KAGGLE_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")  # _validate_slug_syntax
# kagglesdk 0.1.38 ModelFramework / ModelInstanceType, as lookup_enum names
# them.
KAGGLE_FRAMEWORKS = ("tensorFlow1", "tensorFlow2", "tfLite", "tfJs",
                     "pyTorch", "jax", "flax", "coral", "keras", "other")
KAGGLE_INSTANCE_TYPES = ("Unspecified", "BaseModel", "KaggleVariant",
                         "ExternalVariant")
# Kaggle Models' licenses (kaggle-api docs/models_metadata.md, "Licenses").
KAGGLE_LICENSES = (
    "Apache 2.0", "Attribution 3.0 IGO (CC BY 3.0 IGO)",
    "Attribution 3.0 Unported (CC BY 3.0)",
    "Attribution 4.0 International (CC BY 4.0)",
    "Attribution-NoDerivatives 4.0 International (CC BY-ND 4.0)",
    "Attribution-NonCommercial 4.0 International (CC BY-NC 4.0)",
    "Attribution-NonCommercial-NoDerivatives 4.0 International "
    "(CC BY-NC-ND 4.0)",
    "Attribution-NonCommercial-ShareAlike 3.0 IGO (CC BY-NC-SA 3.0 IGO)",
    "BSD-3-Clause", "CC BY-NC-SA 4.0", "CC BY-SA 3.0", "CC BY-SA 4.0",
    "CC0: Public Domain",
    "Community Data License Agreement - Permissive - Version 1.0",
    "Community Data License Agreement - Sharing - Version 1.0",
    "GNU Affero General Public License 3.0",
    "GNU Free Documentation License 1.3",
    "GNU Lesser General Public License 3.0", "GPL 2", "MIT",
    "ODC Attribution License (ODC-By)",
    "ODC Public Domain Dedication and Licence (PDDL)", "GPL 3")
HUB_SECTIONS = ("Overview", "Intended use and limitations", "Training Data",
                "Evaluation", "License", "Citation")
KAGGLE_SECTIONS = ("Model Format", "Model Inputs", "Model Outputs",
                   "Model Usage", "Fine-tuning", "Changelog")
# An absolute path: POSIX (not inside a URL or a relative path), Windows, ~/.
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~$-])/[\w.-]+/|[A-Za-z]:\\|~/")


def machine_paths(text: str, roots) -> list:
  """The machine paths in `text`: any of `roots`, or an absolute path."""
  return [r for r in roots if r in text] + ABSOLUTE_PATH.findall(text)


def json_strings(value):
  """Every string in a JSON value (keys included)."""
  if isinstance(value, dict):
    return [s for k, v in value.items() for s in [k] + json_strings(v)]
  if isinstance(value, list):
    return [s for v in value for s in json_strings(v)]
  return [value] if isinstance(value, str) else []


def front_matter(card: str) -> dict:
  assert card.startswith("---\n"), card[:200]
  return yaml.safe_load(card.split("\n---\n", 1)[0][4:])


def python_snippet(card: str) -> str:
  return re.search(r"```python\n(.*?)```", card, re.S).group(1)


def read(path) -> str:
  with open(path, encoding="utf-8") as f:
    return f.read()


@pytest.fixture(scope="module")
def eval_report_dir(tiny, tmp_path_factory):
  """A `cmlm eval` report of the tiny run, naming paths as real ones do."""
  directory = tmp_path_factory.mktemp("eval")
  report = {
      "model": tiny.model_dir, "created": "2026-01-01T00:00:00+00:00",
      "command_line": f"python -m cmlm eval --model={tiny.model_dir}",
      "subsample": {"max_examples_per_split": 50, "seed": 0},
      # Each task's card entry as `cmlm eval` records it (its Task's).
      "tasks": {"sts-b": {"headline": "spearman", "spearman": 61.234,
                          "main_score": 61.234, "paper": "table 2",
                          "card": tasks.TASKS["sts-b"].card.for_task("sts-b"),
                          "data": {"files": [str(directory / "sts.csv")]}},
                "mr": {"headline": "accuracy", "accuracy": 70.5,
                       "main_score": 70.5, "paper": "table 1",
                       "card": tasks.TASKS["mr"].card.for_task("mr")},
                # As evaluation/mteb_tasks.py records an MTEB task.
                "STSBenchmark": {
                    "headline": "cosine_spearman", "cosine_spearman": 81.456,
                    "main_score": 81.456, "paper": "",
                    "evaluated_on": "MTEB test",
                    "mteb": {"scores": {"test": [{"main_score": 0.81456}]},
                             "type": "STS",
                             "dataset": {"path": "mteb/stsbenchmark-sts",
                                         "revision": "b0fddb56ed78"},
                             "mteb_version": "2.26.0"}}}}
  (directory / "report.json").write_text(json.dumps(report))
  return directory


@pytest.fixture(scope="module")
def stated(tiny, eval_report_dir, tmp_path_factory):
  """The tiny run exported with what a user states and an eval report, then
  packed: (export_dir, package_dir)."""
  root = tmp_path_factory.mktemp("stated")
  options = card_facts.CardOptions(
      model_name="cmlm-tiny", dataset_names=("cmlm=Pride and Prejudice",),
      license="CC0-1.0", languages=("en",))
  result = exporter.export_run(tiny.model_dir, str(root / "export"),
                               eval_report=str(eval_report_dir),
                               card_options=options)
  packaging.package_export(result.export_dir, str(root / "package"))
  return result.export_dir, str(root / "package")


SOURCE_README = """---
language: en
license: apache-2.0
datasets:
- s2orc
- ms_marco
---

# tiny-bert-test

A tiny random BERT.

```bibtex
@misc{tiny-bert-test, title = {A tiny random BERT}}
```
"""


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
  """A tiny sentence-transformers model with a README.md, imported (step 0),
  exported without any card flag and packed: (export_dir, package_dir,
  model_dir)."""
  root = tmp_path_factory.mktemp("imported")
  import_helpers.write_tiny_bert(str(root / "source"))
  (root / "source" / "README.md").write_text(SOURCE_README)
  run = import_run.import_model(str(root / "source"), str(root / "run"))
  result = exporter.export_run(run.model_dir, str(root / "export"))
  packaging.package_export(result.export_dir, str(root / "package"))
  return result.export_dir, str(root / "package"), run.model_dir


def test_card_holds_hub_metadata_signatures_and_config(tiny):
  path = os.path.join(tiny.result.export_dir, "README.md")
  assert os.path.islink(path)  # -> current/README.md, published with it
  card = read(path)
  front = front_matter(card)
  assert front["license"] == "unknown" and front["language"] == ["en"]
  assert front["library_name"] and "sentence-embeddings" in front["tags"]
  assert "model-index" not in front  # no eval report
  assert model_card.body(card).startswith("# CMLM sentence encoder")
  for line in ("<!-- module-type: text-embedding -->",
               "<!-- format: saved_model_2 -->",
               "<!-- fine-tunable: true -->"):
    assert line in card
  for section in HUB_SECTIONS + KAGGLE_SECTIONS:
    assert f"\n## {section}\n" in card
  dim = tiny.in_memory_embeddings(["x"]).shape[1]
  assert f"`embedding` (`float32 [batch, {dim}]`, L2-normalised" in card
  assert f"`ckpt-{tiny.result.step}` (step {tiny.result.step})" in card
  assert "mlm" in card  # exported with the .mlm subobject
  assert "`input_word_ids`, `input_mask`, `input_type_ids`" in card
  assert "seq_length=16" in card  # the run's tokenization
  assert "| cmlm | cmlm | 1 | corpus_en | 4 |" in card  # data by name
  assert "(`vocab_en_uncased.txt`)" in card
  assert "optimizer_config" not in card  # a summary, not params.yaml
  assert "No `cmlm eval` report was found" in card
  assert "No license is stated for these weights" in card
  assert "@inproceedings{yang-etal-2021-universal" in card


def test_card_shows_the_run_s_eval_report(tiny, eval_report_dir):
  run = run_record.read_run(tiny.model_dir, tiny.result.checkpoint_path,
                            eval_report=str(eval_report_dir))
  facts = card_facts.card_facts(run, 7, 16, True)
  card = model_card.model_card(facts)
  assert "| sts-b | spearman | 61.23 | table 2 |" in card
  assert "Evaluated on a subsample" in card
  assert tiny.model_dir not in card  # the report's "model" is a path
  [index] = front_matter(card)["model-index"]
  results = {r["dataset"]["type"]: r for r in index["results"]}
  assert results["sts-b"]["task"]["type"] == "sentence-similarity"
  assert results["sts-b"]["metrics"][0]["type"] == "spearman"
  assert results["sts-b"]["metrics"][0]["value"] == 61.23
  assert results["mr"]["task"]["type"] == "text-classification"
  # An MTEB task as MTEB's own cards name it: its type, the dataset's Hub
  # path, revision and split.
  assert results["mteb/stsbenchmark-sts"] == {
      "task": {"type": "STS"},
      "dataset": {"type": "mteb/stsbenchmark-sts", "name": "MTEB STSBenchmark",
                  "config": "default", "split": "test",
                  "revision": "b0fddb56ed78"},
      "metrics": [{"type": "cosine_spearman", "value": 81.46}]}
  with pytest.raises(FileNotFoundError, match="--eval_report=.* is not a "
                     "report.json"):
    run_record.read_run(tiny.model_dir,
                        eval_report=str(eval_report_dir / "none"))


def test_a_task_s_card_entry_is_the_one_eval_recorded(tiny, tmp_path):
  """A task the core does not know (a project's) is filed as its Task's
  `CardEntry` says, as `cmlm eval` recorded it in the report."""
  entry = tasks.CardEntry("text-classification", "Word analogy",
                          "Google analogies").for_task("word_analogy")
  (tmp_path / "report.json").write_text(json.dumps({"tasks": {
      "word_analogy": {"headline": "accuracy", "accuracy": 50.0,
                       "main_score": 50.0, "paper": "Mikolov et al. 2013",
                       "card": entry}}}))
  run = run_record.read_run(tiny.model_dir, tiny.result.checkpoint_path,
                            eval_report=str(tmp_path))
  card = model_card.model_card(card_facts.card_facts(run, 7, 16, True))
  [result] = front_matter(card)["model-index"][0]["results"]
  assert result["task"] == {"type": "text-classification",
                            "name": "Word analogy"}
  assert result["dataset"] == {"type": "word_analogy",
                               "name": "Google analogies"}


def test_card_states_what_the_user_gave(stated):
  export_dir, _ = stated
  card = read(os.path.join(export_dir, "README.md"))
  front = front_matter(card)
  assert (front["license"], front["language"], front["datasets"]) == (
      "cc0-1.0", ["en"], ["Pride and Prejudice"])
  assert front["model-index"][0]["name"] == "cmlm-tiny"
  assert model_card.body(card).startswith("# cmlm-tiny\n")
  assert "| cmlm | cmlm | 1 | Pride and Prejudice | 4 |" in card
  assert "CC0: Public Domain (`cc0-1.0`)" in card
  assert "guessed" not in card  # --language was given
  for section in HUB_SECTIONS + KAGGLE_SECTIONS:
    assert f"\n## {section}\n" in card
  info = layout.read_info(os.path.join(export_dir, "encoder"))
  assert (info["checkpoint"], info["model_name"], info["license"],
          info["datasets"]) == ("ckpt-4", "cmlm-tiny", "cc0-1.0",
                                ["Pride and Prejudice"])


def test_an_import_s_card_credits_its_source(imported):
  export_dir, _, model_dir = imported
  card = read(os.path.join(export_dir, "README.md"))
  front = front_matter(card)
  assert (front["license"], front["language"], front["datasets"]) == (
      "apache-2.0", ["en"], ["s2orc", "ms_marco"])
  assert "An import of `tiny-bert-test` (sentence-transformers)" in card
  assert "Not trained by the garden" in card and "trained with" not in card
  assert "cmlm" not in front["tags"]
  assert "`s2orc`, `ms_marco`" in card
  assert "Apache 2.0 (`apache-2.0`), the source's license." in card
  for entry in ("@misc{tiny-bert-test", "@inproceedings{devlin-etal-2019",
                "@inproceedings{reimers-gurevych-2019",
                "@inproceedings{yang-etal-2021-universal"):
    assert entry in card
  # cmlm/en_base's recipe, which params.yaml holds, is not the model's.
  assert "1000000" not in card and "lamb" not in card
  assert "optimizer_config" not in card
  with open(os.path.join(model_dir, run_dir.IMPORT_INFO_FILE)) as f:
    assert json.load(f)["license"] == "apache-2.0"


@pytest.mark.parametrize("which", ["tiny", "stated", "imported"])
def test_no_machine_path_in_card_export_info_or_package(
    which, request, tiny, tmp_path_factory):
  """The card, every `export_info.json`, the import's `import_info.json` and
  every JSON of the package (in the archives too) name no path of this
  machine: no absolute path, nor the temporary directory, the repository,
  the home directory or the run. The SavedModels' `.pb` files (the graphs:
  e.g. the vocabulary table's name) hold none of those directories."""
  roots = [r for r in (str(tmp_path_factory.getbasetemp()),
                       export_helpers.REPO_ROOT, os.path.expanduser("~"),
                       os.path.realpath(tiny.model_dir)) if len(r) > 1]
  if which == "tiny":
    export_dir, package_dir, model_dir = tiny.result.export_dir, None, None
  elif which == "stated":
    (export_dir, package_dir), model_dir = request.getfixturevalue(which), None
  else:
    export_dir, package_dir, model_dir = request.getfixturevalue(which)
  texts = {"README.md": read(os.path.join(export_dir, "README.md"))}
  graphs = {}  # binary: searched for the directories only
  for part in layout.PARTS:
    texts[f"{part}/export_info.json"] = json_strings(
        layout.read_info(os.path.join(export_dir, part)))
    for folder, _, files in os.walk(os.path.join(export_dir, part)):
      for name in files:
        if name.endswith(".pb"):
          with open(os.path.join(folder, name), "rb") as f:
            graphs[os.path.join(part, name)] = f.read()
  if model_dir:
    with open(os.path.join(model_dir, run_dir.IMPORT_INFO_FILE)) as f:
      texts["import_info.json"] = json_strings(json.load(f))
  for name in sorted(os.listdir(package_dir) if package_dir else []):
    path = os.path.join(package_dir, name)
    if name.endswith(".json"):
      with open(path, encoding="utf-8") as f:
        texts[name] = json_strings(json.load(f))
    elif name.endswith(".md"):
      texts[name] = read(path)
    elif name.endswith(".tar.gz"):
      with tarfile.open(path) as tar:
        for member in tar.getmembers():
          if member.name.endswith(".json"):
            texts[f"{name}:{member.name}"] = json_strings(
                json.load(tar.extractfile(member)))
          elif member.name.endswith(".pb"):
            graphs[f"{name}:{member.name}"] = tar.extractfile(member).read()
  assert any(":" in name for name in texts) or not package_dir
  found = {name: machine_paths(text if isinstance(text, str) else
                               "\n".join(text), roots)
           for name, text in texts.items()}
  assert not any(found.values()), {k: v for k, v in found.items() if v}
  assert any(name.endswith("saved_model.pb") for name in graphs)
  in_graphs = {name: [r for r in roots if r.encode() in data]
               for name, data in graphs.items()}
  assert not any(in_graphs.values()), {
      k: v for k, v in in_graphs.items() if v}


@pytest.mark.parametrize("which", ["stated", "imported"])
def test_kaggle_metadata_has_what_the_kaggle_client_requires(which, request):
  package = request.getfixturevalue(which)[1]
  with open(os.path.join(package, "model-metadata.json")) as f:
    model = json.load(f)
  with open(os.path.join(package, "model-instance-metadata.json")) as f:
    instance = json.load(f)
  assert set(KAGGLE_MODEL_REQUIRED) <= set(model)
  assert set(KAGGLE_INSTANCE_REQUIRED) <= set(instance)
  for metadata in (model, instance):
    for key, default in KAGGLE_DEFAULTS.items():
      assert metadata.get(key) != default, key
    # The one thing left to fill in: who publishes it.
    assert metadata["ownerSlug"] == packaging.OWNER_PLACEHOLDER
  for slug in (model["slug"], instance["modelSlug"], instance["instanceSlug"]):
    assert KAGGLE_SLUG.match(slug), slug
  assert model["slug"] == instance["modelSlug"]
  assert isinstance(model["isPrivate"], bool)
  assert isinstance(instance["fineTunable"], bool)
  assert instance["trainingData"] and all(
      isinstance(d, str) for d in instance["trainingData"])
  assert instance["licenseName"] in KAGGLE_LICENSES
  assert instance["framework"] in KAGGLE_FRAMEWORKS
  assert instance["modelInstanceType"] in KAGGLE_INSTANCE_TYPES
  assert model["publishTime"] == ""  # or %Y-%m-%d
  assert not model["description"].startswith("---")  # Markdown, no YAML
  assert (model["slug"], instance["licenseName"],
          instance["trainingData"]) == {
              "stated": ("cmlm-tiny", "CC0: Public Domain",
                         ["Pride and Prejudice"]),
              "imported": ("run", "Apache 2.0", ["ms_marco", "s2orc"])}[which]


def test_every_license_the_card_takes_is_one_kaggle_takes():
  assert set(run_facts.LICENSES.values()) <= set(KAGGLE_LICENSES)


def test_package_holds_each_saved_model_at_an_archive_s_root(
    tiny, stated, tmp_path):
  export_dir, package = stated
  assert sorted(os.listdir(package)) == sorted(
      [f"{part}.tar.gz" for part in packaging.PARTS] +
      ["README.md", "model-metadata.json", "model-instance-metadata.json"])
  for part in packaging.PARTS:
    with tarfile.open(os.path.join(package, f"{part}.tar.gz")) as tar:
      names = tar.getnames()
      assert "saved_model.pb" in names and "variables/variables.index" in names
      assert all(m.uid == 0 for m in tar.getmembers())
      tar.extractall(tmp_path / part, filter="data")
  serving = tf.saved_model.load(str(tmp_path / "serving"))
  embeddings = serving(tf.constant(export_helpers.SENTENCES)).numpy()
  expected = tiny.in_memory_embeddings(export_helpers.SENTENCES)
  expected /= np.linalg.norm(expected, axis=1, keepdims=True)
  np.testing.assert_allclose(embeddings, expected, atol=1e-5, rtol=0)
  card = read(os.path.join(package, "README.md"))
  assert card == read(os.path.join(export_dir, "README.md"))
  with open(os.path.join(package, "model-instance-metadata.json")) as f:
    instance = json.load(f)
  assert instance["framework"] == "tensorFlow2"
  assert instance["usage"] == model_card.body(card)
  with pytest.raises(FileExistsError, match="pass --overwrite"):
    packaging.package_export(export_dir, package)


def test_an_export_without_a_license_is_not_packed(tiny, tmp_path):
  with pytest.raises(ValueError, match=r"states no license for its weights "
                     r"\(unknown\).*--license=SPDX_ID"):
    packaging.package_export(tiny.result.export_dir, str(tmp_path / "p"))
  assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("flag, message", [
    ("--license=apache", "--license='apache' is not a license a hub takes"),
    ("--language=english", "--language='english' must be ISO 639"),
    ("--model_name=/tmp/model", "--model_name='/tmp/model' must be a hub "
     "model name"),
    ("--dataset_name=/data/corpus_en", "--dataset_name='/data/corpus_en' "
     "must name a dataset"),
    ("--dataset_name=cmlm=~/corpus", "--dataset_name='cmlm=~/corpus' must "
     "name a dataset"),
])
def test_a_bad_card_flag_is_one_line_before_any_work(flag, message, tmp_path):
  """Refused before the run is read: its --model_dir does not even exist."""
  with pytest.raises(ValueError) as error:
    export_command.main([f"--model_dir={tmp_path / 'none'}",
                         f"--export_dir={tmp_path / 'export'}", flag])
  assert str(error.value).startswith(message), str(error.value)
  assert "\n" not in str(error.value)
  assert not (tmp_path / "export").exists()


def test_cli_says_a_bad_license_in_one_line(tmp_path):
  completed = export_helpers.run_cli(
      "export", f"--model_dir={tmp_path / 'none'}",
      f"--export_dir={tmp_path / 'export'}", "--license=apache")
  assert completed.returncode == 2
  [line] = completed.stderr.strip().splitlines()
  assert line.startswith("cmlm export: error: --license='apache' is not a "
                         "license a hub takes: give an SPDX id among "
                         "apache-2.0, mit,")


def test_package_dir_without_a_license_is_refused_before_the_export(
    tiny, tmp_path):
  with pytest.raises(ValueError, match="states no license"):
    export_command.main([f"--model_dir={tiny.model_dir}",
                         f"--export_dir={tmp_path / 'export'}",
                         f"--package_dir={tmp_path / 'package'}"])
  assert not (tmp_path / "export").exists()


def test_dataset_name_of_an_objective_the_run_lacks_is_refused(tiny):
  with pytest.raises(ValueError, match="names the objective "
                     "'bitext_retrieval', which the run does not train"):
    card_facts.card_facts(
        run_record.read_run(tiny.model_dir, tiny.result.checkpoint_path),
        4, 16, True, options=card_facts.CardOptions(
            dataset_names=("bitext_retrieval=europarl",)))


def test_language_is_guessed_from_the_vocabulary(tiny):
  run = run_record.read_run(tiny.model_dir, find_report=False)
  params = run.params
  assert run_facts.guess_languages(params, run.vocabulary.tokens) == ["en"]
  tokens = ["[PAD]", "[UNK]", "the", "der", "東京", "京", "Москва", "##ва",
            "القاهرة", "नमस्ते"]
  assert run_facts.guess_languages(params, tokens) == ["multilingual"]


def run_snippets(snippets, with_project: bool):
  """Runs `[(directory, code)]` in order in one fresh interpreter, each from
  its directory; with the garden importable or not (as for an outside
  user). Returns stdout."""
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  script = "import os\n" + "".join(
      f"os.chdir({str(directory)!r})\nexec(compile({code!r}, 'snippet', "
      "'exec'), {})\n" for directory, code in snippets)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  env.pop("TF_USE_LEGACY_KERAS", None)  # each snippet sets it
  env.pop("PYTHONPATH", None)
  if with_project:
    env["PYTHONPATH"] = export_helpers.REPO_ROOT
  completed = subprocess.run([sys.executable, "-c", script], cwd="/",
                             env=env, capture_output=True, text=True,
                             timeout=300)
  assert completed.returncode == 0, completed.stderr[-3000:]
  return completed.stdout


@pytest.mark.slow
def test_card_and_readme_snippets_run_verbatim(tiny, tmp_path):
  """The card's snippet from the version's directory, and README.md's
  "Export, serve, encode" snippets from a directory where `exports/tiny` is
  an export: the TF-Hub ones without the project."""
  version_dir = layout.resolve(tiny.result.export_dir)
  with open(os.path.join(version_dir, "README.md"), encoding="utf-8") as f:
    card_snippet = python_snippet(f.read())
  with open(os.path.join(export_helpers.REPO_ROOT, "README.md"),
            encoding="utf-8") as f:
    section = f.read().split("## Export, serve, encode")[1].split("\n## ")[0]
  # The SentenceEncoder snippet is the README's quickstart now, run as
  # written by tests/test_readme_recipes.py; this section keeps TF-Hub's.
  readme = re.findall(r"```python\n(.*?)```", section, re.S)
  assert len(readme) == 1 and "hub.KerasLayer" in readme[0]
  os.makedirs(tmp_path / "exports")
  os.symlink(tiny.result.export_dir, tmp_path / "exports" / "tiny")
  show = "\nprint(embeddings.shape)\n"
  dim = tiny.in_memory_embeddings(["x"]).shape[1]
  stdout = run_snippets([(version_dir, card_snippet),
                         (tmp_path, readme[0] + show)], with_project=False)
  assert stdout.splitlines() == [f"(2, {dim}) (2, {dim})", f"(2, {dim})"]
