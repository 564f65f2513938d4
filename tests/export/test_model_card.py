"""The model card (export/model_card.py) and the hub packages
(export/packaging.py) of an export."""
import json
import os
import re
import tarfile

import numpy as np
import pytest

import export  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf

from export import model_card
from export import packaging
from export import publish
from tests.export import export_helpers


def python_snippet(card: str) -> str:
  return re.search(r"```python\n(.*?)```", card, re.S).group(1)


def test_card_holds_hub_metadata_signatures_and_config(tiny):
  path = os.path.join(tiny.result.export_dir, "README.md")
  assert os.path.islink(path)  # -> current/README.md, published with it
  with open(path, encoding="utf-8") as f:
    card = f.read()
  assert card.startswith("# CMLM sentence encoder")
  for line in ("<!-- module-type: text-embedding -->",
               "<!-- format: saved_model_2 -->",
               "<!-- fine-tunable: true -->"):
    assert line in card
  for section in ("Model Format", "Training Data", "Model Inputs",
                  "Model Outputs", "Model Usage", "Fine-tuning",
                  "Evaluation", "Changelog"):
    assert f"\n## {section}\n" in card
  dim = tiny.in_memory_embeddings(["x"]).shape[1]
  assert f"`embedding` (`float32 [batch, {dim}]`, L2-normalised" in card
  assert f"(step {tiny.result.step})" in card
  assert "mlm" in card  # exported with the .mlm subobject
  assert "`input_word_ids`, `input_mask`, `input_type_ids`" in card
  assert "seq_length: 16" in card  # the run's params.yaml
  assert "No `cmlm eval` report was found" in card


def test_card_shows_the_run_s_eval_report(tiny, tmp_path):
  report = {"model": tiny.model_dir, "created": "2026-01-01T00:00:00+00:00",
            "subsample": {"max_examples_per_split": 50, "seed": 0},
            "tasks": {"sts-b": {"headline": "spearman", "spearman": 61.234,
                                "main_score": 61.234, "paper": "table 2"}}}
  (tmp_path / "report.json").write_text(json.dumps(report))
  facts = model_card.card_facts(tiny.model_dir, tiny.result.checkpoint_path,
                                tiny.result.step, 7, 16, True,
                                eval_report=str(tmp_path))
  card = model_card.model_card(facts)
  assert "| sts-b | spearman | 61.23 | table 2 |" in card
  assert "Evaluated on a subsample" in card
  with pytest.raises(FileNotFoundError, match="--eval_report=.* is not a "
                     "report.json"):
    model_card.card_facts(tiny.model_dir, "c", 1, 1, 16, True,
                          eval_report=str(tmp_path / "none"))


def test_package_holds_each_saved_model_at_an_archive_s_root(tiny, tmp_path):
  package = tmp_path / "package"
  paths = packaging.package_export(tiny.result.export_dir, str(package))
  assert sorted(os.listdir(package)) == sorted(os.path.basename(p)
                                               for p in paths)
  for part in packaging.PARTS:
    with tarfile.open(package / f"{part}.tar.gz") as tar:
      names = tar.getnames()
      assert "saved_model.pb" in names and "variables/variables.index" in names
      assert all(m.uid == 0 for m in tar.getmembers())
      tar.extractall(tmp_path / part, filter="data")
  serving = tf.saved_model.load(str(tmp_path / "serving"))
  embeddings = serving(tf.constant(export_helpers.SENTENCES)).numpy()
  expected = tiny.in_memory_embeddings(export_helpers.SENTENCES)
  expected /= np.linalg.norm(expected, axis=1, keepdims=True)
  np.testing.assert_allclose(embeddings, expected, atol=1e-5, rtol=0)
  with open(package / "README.md", encoding="utf-8") as f:
    card = f.read()
  with open(os.path.join(tiny.result.export_dir, "README.md"),
            encoding="utf-8") as f:
    assert card == f.read()
  with open(package / "model-instance-metadata.json") as f:
    instance = json.load(f)
  assert instance["framework"] == "tensorFlow2" and instance["usage"] == card
  with pytest.raises(FileExistsError, match="pass --overwrite"):
    packaging.package_export(tiny.result.export_dir, str(package))


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
  an export: the TF-Hub ones without the project, the SentenceEncoder one
  with the garden importable (as `pip install -e .` makes it)."""
  version_dir = publish.resolve(tiny.result.export_dir)
  with open(os.path.join(version_dir, "README.md"), encoding="utf-8") as f:
    card_snippet = python_snippet(f.read())
  with open(os.path.join(export_helpers.REPO_ROOT, "README.md"),
            encoding="utf-8") as f:
    section = f.read().split("## Export, serve, encode")[1].split("\n## ")[0]
  readme = re.findall(r"```python\n(.*?)```", section, re.S)
  assert len(readme) == 2 and "from cmlm import" in readme[0]
  os.makedirs(tmp_path / "exports")
  os.symlink(tiny.result.export_dir, tmp_path / "exports" / "tiny")
  show = "\nprint(embeddings.shape)\n"
  dim = tiny.in_memory_embeddings(["x"]).shape[1]
  stdout = run_snippets([(version_dir, card_snippet),
                         (tmp_path, readme[1] + show)], with_project=False)
  assert stdout.splitlines() == [f"(2, {dim}) (2, {dim})", f"(2, {dim})"]
  stdout = run_snippets([(tmp_path, readme[0] + show)], with_project=True)
  assert stdout.strip() == f"(2, {dim})"
