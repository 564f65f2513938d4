"""The model card an export carries: `README.md` for the Hugging Face Hub,
TF-Hub and Kaggle Models.

    options = check_options(CardOptions(model_name="cmlm-en-base",
                                        license="apache-2.0"))
    run = inference.run_record.read_run(model_dir)
    text = model_card(card_facts(run, version, embedding_dim, normalize,
                                 options=options))

(the facts and the options: `export.cards.card_facts`)

One Markdown file, written into each exported version
(`EXPORT_DIR/versions/<name>/README.md`, reached as `EXPORT_DIR/README.md`)
and into a package (`export.packaging`):

  * YAML front matter as the Hugging Face Hub reads it: `language`,
    `license`, `library_name`, `pipeline_tag`, `tags`, `datasets` and
    `base_model` when stated, and `model-index` (the run's `cmlm eval`
    results, machine-readable);
  * a title, then tfhub.dev's metadata comments (`<!-- module-type:
    text-embedding -->`, `format`, `fine-tunable`, `network-architecture`);
  * the sections a hub expects (Overview, Intended use and limitations,
    Training Data, Evaluation, License, Citation) with Kaggle Models'
    template sections among them (Model Format, Model Inputs, Model
    Outputs, Model Usage: a snippet that runs as written from the card's
    directory, Fine-tuning, Changelog).

The card names no local path: the checkpoint and the vocabulary
by their names relative to the run (`ckpt-2000`, `vocab.txt`), training
data by `--dataset_name` or by file name, the model by `--model_name` or
the run directory's name. A run written by `python -m cmlm import` (its
`import_info.json`) is described as an import of its source, crediting the
source's name, license and citation; a run trained from one
(`task.init_checkpoint`) credits it as its starting point.

What a trained model is: a sentence encoder trained with Conditional Masked
Language Modeling (Yang et al. 2021, "Universal Sentence Representation
Learning with Conditional Masked Language Model", arXiv:2012.14388,
sections 2-3) and the run's other objectives, mean/cls/max pooled.
"""
import re
from typing import Dict, List, Optional, Sequence, Tuple

from cmlm.export.cards import artifact_card
from cmlm.export.cards import card_facts as facts_lib
from cmlm.export.cards.card_facts import CardFacts
from cmlm.inference import run_facts

CMLM_BIBTEX = """@inproceedings{yang-etal-2021-universal,
    title = "Universal Sentence Representation Learning with Conditional Masked Language Model",
    author = "Yang, Ziyi and Yang, Yinfei and Cer, Daniel and Law, Jax and Darve, Eric",
    booktitle = "Proceedings of the 2021 Conference on Empirical Methods in Natural Language Processing",
    year = "2021",
    address = "Online and Punta Cana, Dominican Republic",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2021.emnlp-main.502",
    doi = "10.18653/v1/2021.emnlp-main.502",
    pages = "6216--6228",
}"""
BERT_BIBTEX = """@inproceedings{devlin-etal-2019-bert,
    title = "{BERT}: Pre-training of Deep Bidirectional Transformers for Language Understanding",
    author = "Devlin, Jacob and Chang, Ming-Wei and Lee, Kenton and Toutanova, Kristina",
    booktitle = "Proceedings of the 2019 Conference of the North {A}merican Chapter of the Association for Computational Linguistics: Human Language Technologies, Volume 1 (Long and Short Papers)",
    year = "2019",
    address = "Minneapolis, Minnesota",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/N19-1423",
    doi = "10.18653/v1/N19-1423",
    pages = "4171--4186",
}"""
SBERT_BIBTEX = """@inproceedings{reimers-gurevych-2019-sentence,
    title = "Sentence-{BERT}: Sentence Embeddings using {S}iamese {BERT}-Networks",
    author = "Reimers, Nils and Gurevych, Iryna",
    booktitle = "Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing and the 9th International Joint Conference on Natural Language Processing (EMNLP-IJCNLP)",
    year = "2019",
    address = "Hong Kong, China",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/D19-1410",
    doi = "10.18653/v1/D19-1410",
    pages = "3982--3992",
}"""
def _scores(facts: CardFacts) -> List[Tuple[str, str, Optional[float], str]]:
  """(task, metric, score, paper) of each task of the eval report."""
  rows = []
  for name, result in (facts.eval_report or {}).get("tasks", {}).items():
    headline = result.get("headline", "main_score")
    score = result.get("main_score", result.get(headline))
    rows.append((name, headline, float(score) if isinstance(
        score, (int, float)) else None, str(result.get("paper", ""))))
  return rows


def _mteb_result(name: str, metric: str, score: float, record: dict) -> dict:
  """An MTEB task's model-index entry as MTEB's own cards write it: the
  task's MTEB type (`STS`, `Classification`, ...), the dataset's Hub path
  and revision, "MTEB <task>" as its name, and the split scored."""
  dataset = record.get("dataset") or {}
  entry = {"type": dataset.get("path", name), "name": f"MTEB {name}",
           "config": "default"}
  splits = list(record.get("scores") or {})
  if len(splits) == 1:
    entry["split"] = splits[0]
  if dataset.get("revision"):
    entry["revision"] = dataset["revision"]
  return {"task": {"type": record.get("type") or "feature-extraction"},
          "dataset": entry,
          "metrics": [{"type": metric, "value": round(score, 2)}]}


TF_HUB_TAGS = ("sentence-embeddings", "sentence-similarity",
               "feature-extraction", "text-embedding", "tensorflow",
               "tensorflow-hub", "saved_model")


def front_matter(facts: CardFacts, library_name: str = "tf-keras",
                 tags: Sequence[str] = TF_HUB_TAGS) -> List[str]:
  """The YAML front matter, as the Hugging Face Hub reads it, between its
  `---` lines (the sentence-transformers folder's card names its own
  library and tags).

  Examples:
    >>> front_matter(facts, "sentence-transformers", ["onnx"])[0]
    '---'
  """
  import yaml  # pylint: disable=g-import-not-at-top
  front = {}
  if facts.languages:
    front["language"] = facts.languages
  front["license"] = facts.license
  front.update({"library_name": library_name,
                "pipeline_tag": "sentence-similarity",
                "tags": list(tags) + ([] if facts.imported else ["cmlm"])})
  if facts.stated_datasets:
    front["datasets"] = facts.stated_datasets
  origin = facts.origin or {}
  if "/" in origin.get("source_name", ""):
    front["base_model"] = origin["source_name"]
  results = []
  for name, metric, score, paper in _scores(facts):
    if score is None:
      continue
    mteb_record = facts.eval_report["tasks"][name].get("mteb")
    if mteb_record:
      results.append(_mteb_result(name, metric, score, mteb_record))
      continue
    # How the task files its result, as `cmlm eval` recorded it
    # (`evaluation.tasks.CardEntry`); a report without it, as a feature.
    card = facts.eval_report["tasks"][name].get("card") or {}
    results.append({
        "task": {"type": card.get("task_type", "feature-extraction"),
                 "name": card.get("task_name", name)},
        "dataset": {"type": name,
                    "name": card.get("dataset", name.upper())},
        "metrics": [{"type": metric, "value": round(score, 2),
                     "name": f"{metric} ({paper} of the paper)" if paper
                             else metric}]})
  if results:
    front["model-index"] = [{"name": facts.model_name, "results": results}]
  text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True,
                        default_flow_style=False, width=1000)
  return ["---"] + text.rstrip().splitlines() + ["---"]


def _metadata(facts: CardFacts) -> List[str]:
  encoder = facts.params.task.model.encoder
  return [
      "<!-- module-type: text-embedding -->",
      "<!-- format: saved_model_2 -->",
      "<!-- fine-tunable: true -->",
      f"<!-- network-architecture: transformer (BERT, {encoder.num_layers} "
      f"layers, hidden {encoder.hidden_size}, {encoder.num_attention_heads} "
      "heads) -->",
  ] + [f"<!-- dataset: {d} -->" for d in sorted(
      {n for names in facts.datasets.values() for n in names})] + [
          f"<!-- language: {code} -->" for code in facts.languages]


def _origin_text(origin: dict) -> str:
  url = origin.get("url", "")
  name = origin.get("source_name") or "(unnamed source)"
  return (f"[{name}]({url})" if url else f"`{name}`") + (
      f" ({origin['source_format']})" if origin.get("source_format") else "")


def overview(facts: CardFacts) -> List[str]:
  """The card's Overview lines (the folder's card shares them).

  Examples:
    >>> overview(facts)[0].startswith("A universal sentence encoder")
    True
  """
  params = facts.params
  model, tokenization = params.task.model, params.task.tokenization
  encoder = model.encoder
  if facts.imported:
    lead = (f"An import of {_origin_text(facts.origin)} into the CMLM "
            "garden's TF-Hub and TF Serving formats (`python -m cmlm "
            "import`, then `export`): the source's weights, unchanged, not "
            "trained by the garden (step 0). A BERT-style transformer whose "
            f"{model.pooling}-pooled output is the sentence embedding.")
  else:
    objectives = [facts_lib.OBJECTIVE_WORDS.get(o.type, o.type) for o in
                  params.task.active_objectives().values()]
    lead = (f"A universal sentence encoder trained with "
            f"{' and '.join(objectives)} ({facts_lib.PAPER}) on TensorFlow Model "
            "Garden: a BERT-style transformer whose "
            f"{model.pooling}-pooled output is the sentence embedding.")
    if facts.origin:
      lead += (f" Training started from {_origin_text(facts.origin)}, "
               "imported with `python -m cmlm import`.")
  languages = ", ".join(facts.languages) or "not stated"
  return [lead, "",
          f"- Model: `{facts.model_name}`, checkpoint `{facts.checkpoint}` "
          f"(step {facts.step}); serving version {facts.version}.",
          f"- Embedding: {facts.embedding_dim} float32 dimensions "
          f"({model.pooling} pooling, `{model.sentence_representation}` "
          "representation).",
          f"- Encoder: {encoder.num_layers} layers, hidden size "
          f"{encoder.hidden_size}, {encoder.num_attention_heads} attention "
          f"heads, inner size {encoder.intermediate_size}, vocabulary "
          f"{encoder.vocab_size} WordPieces (`{facts.vocabulary}`).",
          f"- Tokenization: WordPiece, lower_case={tokenization.lower_case}, "
          f"text_normalization={tokenization.text_normalization}, "
          f"seq_length={tokenization.seq_length}.",
          f"- Language: {languages}" + ("" if facts.languages_stated else
                                       " (guessed from the vocabulary and "
                                       "objectives; state it with "
                                       "`--language`)") + ".",
          f"- License: `{facts.license}` (see License below)."]


def _intended_use(facts: CardFacts) -> List[str]:
  params = facts.params
  lines = ["Sentence embeddings for semantic similarity, retrieval and "
           "clustering, and as features for classifiers (the SentEval "
           "transfer tasks of the paper); the encoder can be fine-tuned.", "",
           f"- Text longer than {params.task.tokenization.seq_length} "
           "WordPiece tokens is truncated.",
           "- The embeddings carry the language, domain and biases of the "
           "training data (below); check them on your own data before "
           "relying on them."]
  if facts.imported:
    lines.append("- The weights are the source's: its own model card states "
                 "its intended use and limitations. CMLM's projection head, "
                 "new at import, is untrained and not part of the export.")
  elif facts.step < params.trainer.train_steps:
    lines.append(f"- This checkpoint is step {facts.step} of the "
                 f"{params.trainer.train_steps} steps the run configures: "
                 "training had not finished.")
  if not facts.eval_report:
    lines.append("- Its quality has not been measured: no `cmlm eval` report "
                 "came with the export.")
  return lines


def _training(facts: CardFacts) -> List[str]:
  params = facts.params
  if facts.imported:
    names = facts.datasets.get("source") or []
    return [f"Not trained by the garden: an import of "
            f"{_origin_text(facts.origin)} at step 0. Its training data are "
            "the source's: " + (", ".join(f"`{n}`" for n in names) + (
                " (as stated by the source's model card or `--dataset_name`)"
                ".") if names else "not recorded by the source; see its "
            "model card.")]
  lines = ["| objective | type | weight | data | global batch |",
           "|---|---|---:|---|---:|"]
  for name, objective in params.task.active_objectives().items():
    data = getattr(objective, "train_data", None)
    lines.append(f"| {name} | {objective.type} | {objective.weight:g} | "
                 f"{', '.join(facts.datasets.get(name, []))} | "
                 f"{getattr(data, 'global_batch_size', '')} |")
  trainer = params.trainer
  optimization = trainer.optimizer_config
  schedule = optimization.learning_rate
  rate = getattr(getattr(schedule, schedule.type, None),
                 "initial_learning_rate", None)
  warmup = getattr(getattr(optimization.warmup, optimization.warmup.type or "",
                           None), "warmup_steps", None)
  lines += ["", f"Step {facts.step} of {trainer.train_steps} configured; "
            f"optimizer {optimization.optimizer.type}"
            + (f", peak learning rate {rate:g}" if rate else "")
            + (f" after {warmup} warm-up steps" if warmup else "")
            + f" ({schedule.type} schedule); sequence length "
            f"{params.task.tokenization.seq_length}; "
            f"{params.task.model.num_projections} projections (CMLM's N). "
            "The full configuration is the run's `params.yaml`."]
  if facts.origin:
    lines += ["", f"Initialised from {_origin_text(facts.origin)}, whose own "
              "training data are "
              + (", ".join(f"`{n}`" for n in facts.origin.get("datasets")
                           or []) or "described in its model card") + "."]
  return lines


def _usage(facts: CardFacts) -> List[str]:
  seq_length = facts.params.task.tokenization.seq_length
  return [
      "From the directory holding `encoder/`, `preprocessor/` and `serving/` "
      "(an export's `current/`, or a package's three archives unpacked with "
      "`for m in encoder preprocessor serving; do mkdir -p $m && tar -xzf "
      "$m.tar.gz -C $m; done`). Keras 2 is needed by `hub.KerasLayer`: set "
      "`TF_USE_LEGACY_KERAS=1` before TensorFlow is imported.",
      "",
      "```python",
      "import os",
      "os.environ.setdefault(\"TF_USE_LEGACY_KERAS\", \"1\")  # Keras 2 for "
      "hub.KerasLayer",
      "import tensorflow as tf",
      "import tensorflow_hub as hub",
      "import tensorflow_text  # noqa: F401  (registers the preprocessor's ops)",
      "",
      "sentences = tf.constant([\"A sentence.\", \"Another one.\"])",
      "# Encoder + preprocessor (TF-Hub's BERT API): fine-tunable, any head.",
      "preprocess = hub.KerasLayer(\"preprocessor\")",
      "encoder = hub.KerasLayer(\"encoder\", trainable=True)",
      "outputs = encoder(preprocess(sentences))",
      f"embeddings = outputs[\"default\"]  # [2, {facts.embedding_dim}], "
      "not normalised",
      "# The text-to-embedding model (the one TF Serving serves).",
      "embed = hub.load(\"serving\")",
      f"vectors = embed(sentences)  # [2, {facts.embedding_dim}]"
      + (", unit length" if facts.normalize else ""),
      "print(embeddings.shape, vectors.shape)",
      "```",
      "",
      f"Sentences longer than {seq_length} WordPiece tokens are truncated.",
      "",
      "With the garden installed (`pip install -e .`): "
      "`from cmlm import SentenceEncoder; "
      "SentenceEncoder(PATH).encode(sentences)`, or "
      "`python -m cmlm encode --model=PATH --input=... --output=...`.",
      "",
      "TF Serving: `tensorflow_model_server --rest_api_port=8501 "
      "--model_name=cmlm --model_base_path=\"$PWD/base\"`, where "
      "`base` is an export's `serving/` (numbered versions inside) or, "
      "from a package, `mkdir -p base/1 && tar -xzf serving.tar.gz -C "
      "base/1`; then `curl -d '{\"instances\": [\"a sentence\"]}' "
      "localhost:8501/v1/models/cmlm:predict`.",
  ]


def _evaluation(facts: CardFacts) -> List[str]:
  if not facts.eval_report:
    return ["No `cmlm eval` report was found for this run (export looks for "
            "`RUN/eval/report.json`; run `python -m cmlm eval --model=RUN "
            "--tasks=... --report_dir=RUN/eval` before exporting, or pass "
            "`--eval_report`)."]
  report = facts.eval_report
  lines = [f"`python -m cmlm eval` of this checkpoint "
           f"({report.get('created', '')}; `{facts.eval_report_name}`), in "
           "the paper's units; the same figures are the front matter's "
           "`model-index`:",
           "", "| task | metric | score | paper |", "|---|---|---:|---|"]
  for name, metric, score, paper in _scores(facts):
    lines.append(f"| {name} | {metric} | "
                 f"{'n/a' if score is None else f'{score:.2f}'} | {paper} |")
  subsample = report.get("subsample")
  if subsample:
    lines += ["", f"Evaluated on a subsample: {subsample}."]
  return lines


def license_lines(facts: CardFacts) -> List[str]:
  """The card's License section, one paragraph.

  Examples:
    >>> license_lines(facts)[0].startswith("No license is stated")
    True
  """
  origin = facts.origin or {}
  lines = []
  try:
    from_source = facts.imported and run_facts.license_id(
        str(origin.get("license") or "?")) == facts.license
  except ValueError:
    from_source = False
  if facts.license in run_facts.LICENSES:
    lines.append(f"The weights are released under {run_facts.LICENSES[facts.license]}"
                 f" (`{facts.license}`)" + (", the source's license."
                                            if from_source else "."))
  else:
    lines.append("No license is stated for these weights. A model's terms "
                 "follow from its training data's (and, for an import, its "
                 "source's), so export chooses none: export again with "
                 "`--license=SPDX_ID` (e.g. `--license=apache-2.0`) before "
                 "publishing. `--package_dir` refuses an export without one: "
                 "Kaggle Models needs a license.")
  if origin:
    lines.append(f"The source, {_origin_text(origin)}, is licensed "
                 + (f"`{origin['license']}`" if origin.get("license")
                    else "as its own model card says (not recorded at "
                    "import)") + "; weights derived from it carry its terms.")
  return [" ".join(lines)]


def citation_lines(facts: CardFacts) -> List[str]:
  """The card's Citation section: a lead line and the BibTeX entries.

  Examples:
    >>> citation_lines(facts)[2]
    '```bibtex'
  """
  origin = facts.origin or {}
  entries = list(origin.get("citation") or [])
  if origin:
    entries += [BERT_BIBTEX] + (
        [SBERT_BIBTEX] if origin.get("source_format") ==
        "sentence-transformers" else [])
  lead = ("If you use this model, cite its source and the architecture; "
          "cite CMLM when you train it further with the garden:"
          if facts.imported else "If you use this model, cite CMLM" + (
              ", and the model training started from:" if origin else ":"))
  entries = ([] if facts.imported else [CMLM_BIBTEX]) + entries + (
      [CMLM_BIBTEX] if facts.imported else [])
  return [lead, "", "```bibtex", "\n\n".join(entries), "```"]


def model_card(facts: CardFacts,
               artifacts: Optional[Dict[str, dict]] = None,
               sentence_transformers: Optional[dict] = None) -> str:
  """The card's Markdown text (see the module docstring); `artifacts`, the
  manifests of the TFLite / ONNX artifacts written (`export.artifacts`);
  `sentence_transformers`, the folder's manifest
  (`export.sentence_transformers_folder`)."""
  params = facts.params
  model, tokenization = params.task.model, params.task.tokenization
  encoder = model.encoder
  lines = front_matter(facts) + ["", f"# {facts.title}", ""]
  lines += _metadata(facts)
  lines += ["", "## Overview", ""] + overview(facts)
  lines += ["", "## Intended use and limitations", ""] + _intended_use(facts)
  lines += ["", "## Model Format", "",
            "Three TensorFlow 2 SavedModels (TF-Hub's `saved_model_2`):",
            "",
            "- `encoder/`: TF-Hub BERT encoder API, fine-tunable.",
            "- `preprocessor/`: TF-Hub BERT preprocessor API (TF Text ops).",
            "- `serving/`: text to embedding, for TF Serving and `hub.load`."]
  lines += ["", "## Training Data", ""] + _training(facts)
  lines += ["", "## Model Inputs", "",
            "- `preprocessor`: a `tf.string` tensor `[batch]` of sentences "
            "(UTF-8); `preprocessor.tokenize` and "
            "`preprocessor.bert_pack_inputs` for sentence pairs.",
            "- `encoder`: `input_word_ids`, `input_mask`, `input_type_ids`, "
            f"each `int32 [batch, {tokenization.seq_length}]`.",
            "- `serving`: signature `serving_default`, input `sentences` "
            "(`tf.string [batch]`)" + (
                "; signature `serving_pcr`, inputs `sentences` and "
                "`languages` (`tf.string [batch]`: each sentence's language "
                "code)" if facts.has_pcr else "") + ".",
            "", "## Model Outputs", "",
            f"- `encoder`: `default` and `pooled_output` (`float32 [batch, "
            f"{facts.embedding_dim}]`, the sentence embedding), "
            f"`sequence_output` (`float32 [batch, {tokenization.seq_length}, "
            f"{encoder.hidden_size}]`), `encoder_outputs` (one per layer)"
            + ("; the `.mlm` subobject gives MLM logits." if facts.has_mlm
               else "."),
            f"- `serving`: `embedding` (`float32 [batch, "
            f"{facts.embedding_dim}]`" + (", L2-normalised: a dot product is "
                                          "the cosine" if facts.normalize
                                          else ", not normalised") + ")" +
            ("; `serving_pcr` removes the language's first principal "
             "component first (paper section 5.2)." if facts.has_pcr
             else ".")]
  lines += ["", "## Model Usage", ""] + _usage(facts)
  lines += artifact_card.artifact_section(artifacts or {})
  lines += artifact_card.sentence_transformers_section(
      sentence_transformers or {})
  lines += ["", "## Fine-tuning", "",
            "`hub.KerasLayer(\"encoder\", trainable=True)` under a Keras 2 "
            "model fine-tunes every encoder weight (the preprocessor has "
            "none)."]
  lines += ["", "## Evaluation", ""] + _evaluation(facts)
  lines += ["", "## License", ""] + license_lines(facts)
  lines += ["", "## Citation", ""] + citation_lines(facts)
  lines += ["", "## Changelog", "",
            f"- Version {facts.version}: `{facts.checkpoint}` (step "
            f"{facts.step}) of `{facts.model_name}`.", ""]
  return "\n".join(lines)


def body(card: str) -> str:
  """`card` without its YAML front matter (Kaggle's description and usage
  are Markdown alone)."""
  match = re.match(r"---\n.*?\n---\n+", card, re.S)
  return card[match.end():] if match else card
