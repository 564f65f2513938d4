"""The model card an export carries: `README.md` for TF-Hub and Kaggle Models.

    text = model_card(CardFacts(...))

One Markdown file, written into each exported version
(`EXPORT_DIR/versions/<name>/README.md`, reached as `EXPORT_DIR/README.md`)
and into a package (`export.packaging`):

  * a title line, then tfhub.dev's metadata comments (`<!-- module-type:
    text-embedding -->`, `format`, `fine-tunable`, `network-architecture`,
    `dataset`, `language` when known), as tfhub.dev's model Markdown has them;
  * Kaggle Models' model-card sections: Model Format, Training Data, Model
    Inputs, Model Outputs (with the signatures), Model Usage (a snippet that
    runs as written from the card's directory), Fine-tuning, Evaluation
    (the run's `cmlm eval` report when one exists), Changelog.

What the model is: a sentence encoder trained with Conditional Masked
Language Modeling (Yang et al. 2021, `../shared/papers/cmlm_yang2021.txt`,
sections 2-3) and the run's other objectives, mean/cls/max pooled.
"""
import dataclasses
import json
import os
from typing import Dict, List, Optional

from export import publish
from training import run_dir

CARD_FILE = publish.CARD_FILE
# Where export looks for the run's `cmlm eval` report by default.
EVAL_REPORT_PLACES = (os.path.join("eval", "report.json"), "report.json")
PAPER = ("Yang et al. 2021, *Universal Sentence Representation Learning with "
         "Conditional Masked Language Model* (CMLM)")


@dataclasses.dataclass
class CardFacts:
  """What the card says, gathered by `export.exporter` from the run."""
  title: str
  checkpoint_path: str
  step: int
  version: int
  params: object  # the run's cfg.ExperimentConfig
  embedding_dim: int
  normalize: bool
  has_pcr: bool = False
  has_mlm: bool = False
  eval_report: Optional[dict] = None
  eval_report_path: str = ""


def find_eval_report(model_dir: str, path: Optional[str] = None
                     ) -> Optional[str]:
  """`path` (a report.json or the directory holding one), else the run's
  `eval/report.json` or `report.json` when present; None when none."""
  if path:
    candidate = (os.path.join(path, "report.json") if os.path.isdir(path)
                 else path)
    if not os.path.isfile(candidate):
      raise FileNotFoundError(f"--eval_report={path} is not a report.json of "
                              "`python -m cmlm eval` (nor a directory "
                              "holding one).")
    return candidate
  for place in EVAL_REPORT_PLACES:
    candidate = os.path.join(model_dir, place)
    if os.path.isfile(candidate):
      return candidate
  return None


def read_eval_report(path: str) -> dict:
  try:
    with open(path, encoding="utf-8") as f:
      report = json.load(f)
  except (OSError, ValueError) as error:
    raise ValueError(f"{path} is not a readable JSON report ({error})."
                     ) from None
  if not isinstance(report, dict) or not isinstance(report.get("tasks"), dict):
    raise ValueError(f"{path} is not a report of `python -m cmlm eval` (no "
                     "'tasks').")
  return report


def _objectives(params) -> List[Dict[str, str]]:
  rows = []
  for name, objective in params.task.active_objectives().items():
    data = getattr(objective, "train_data", None)
    source = (getattr(data, "input_path", "") or
              getattr(data, "tfds_name", "") or "(not recorded)")
    rows.append(dict(name=name, type=objective.type,
                     weight=f"{objective.weight:g}", data=str(source)))
  return rows


def _metadata(facts: CardFacts) -> List[str]:
  encoder = facts.params.task.model.encoder
  datasets = sorted({row["data"] for row in _objectives(facts.params)})
  lines = [
      "<!-- module-type: text-embedding -->",
      "<!-- format: saved_model_2 -->",
      "<!-- fine-tunable: true -->",
      f"<!-- network-architecture: transformer (BERT, {encoder.num_layers} "
      f"layers, hidden {encoder.hidden_size}, {encoder.num_attention_heads} "
      "heads) -->",
  ]
  lines += [f"<!-- dataset: {d} -->" for d in datasets]
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
  ]


def _evaluation(facts: CardFacts) -> List[str]:
  if not facts.eval_report:
    return ["No `cmlm eval` report was found for this run (export looks for "
            "`RUN/eval/report.json`; run `python -m cmlm eval --model=RUN "
            "--tasks=... --report_dir=RUN/eval` before exporting, or pass "
            "`--eval_report`)."]
  report = facts.eval_report
  lines = [f"`python -m cmlm eval` of `{report.get('model', '')}` "
           f"({report.get('created', '')}; "
           f"{os.path.basename(facts.eval_report_path)}):", "",
           "| task | metric | score | paper |", "|---|---|---:|---|"]
  for name, result in report["tasks"].items():
    headline = result.get("headline", "main_score")
    score = result.get("main_score", result.get(headline))
    score = f"{score:.2f}" if isinstance(score, (int, float)) else "n/a"
    lines.append(f"| {name} | {headline} | {score} | "
                 f"{result.get('paper', '')} |")
  subsample = report.get("subsample")
  if subsample:
    lines += ["", f"Evaluated on a subsample: {subsample}."]
  return lines


def model_card(facts: CardFacts) -> str:
  """The card's Markdown text (see the module docstring)."""
  params = facts.params
  model, tokenization = params.task.model, params.task.tokenization
  encoder = model.encoder
  trainer = params.trainer
  objectives = _objectives(params)
  lines = [f"# {facts.title}", "",
           f"A universal sentence encoder trained with {PAPER} "
           "on TensorFlow Model Garden: a BERT-style transformer whose "
           f"{model.pooling}-pooled output is the sentence embedding.", ""]
  lines += _metadata(facts)
  lines += ["", "## Overview", "",
            f"- Checkpoint: `{facts.checkpoint_path}` (step {facts.step}); "
            f"serving version {facts.version}.",
            f"- Embedding: {facts.embedding_dim} float32 dimensions "
            f"({model.pooling} pooling, `{model.sentence_representation}` "
            "representation).",
            f"- Encoder: {encoder.num_layers} layers, hidden size "
            f"{encoder.hidden_size}, {encoder.num_attention_heads} attention "
            f"heads, inner size {encoder.intermediate_size}, vocabulary "
            f"{encoder.vocab_size} WordPieces.",
            f"- Tokenization: WordPiece, lower_case={tokenization.lower_case}, "
            f"text_normalization={tokenization.text_normalization}, "
            f"seq_length={tokenization.seq_length}.",
            "", "## Model Format", "",
            "Three TensorFlow 2 SavedModels (TF-Hub's `saved_model_2`):",
            "",
            "- `encoder/`: TF-Hub BERT encoder API, fine-tunable.",
            "- `preprocessor/`: TF-Hub BERT preprocessor API (TF Text ops).",
            "- `serving/`: text to embedding, for TF Serving and `hub.load`.",
            "", "## Training Data", "",
            "| objective | type | weight | data |", "|---|---|---:|---|"]
  lines += [f"| {o['name']} | {o['type']} | {o['weight']} | `{o['data']}` |"
            for o in objectives]
  lines += ["", f"{trainer.train_steps} training steps configured; "
            f"optimizer {trainer.optimizer_config.optimizer.type}. "
            "The full configuration is the run's `params.yaml`:", "",
            "```yaml", _yaml(params).rstrip(), "```",
            "", "## Model Inputs", "",
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
             else "."),
            "", "## Model Usage", ""]
  lines += _usage(facts)
  lines += ["", "With the garden installed (`pip install -e .`): "
            "`from cmlm import SentenceEncoder; "
            "SentenceEncoder(PATH).encode(sentences)`, or "
            "`python -m cmlm encode --model=PATH --input=... --output=...`.",
            "", "TF Serving: `tensorflow_model_server --rest_api_port=8501 "
            "--model_name=cmlm --model_base_path=/abs/path/to/base`, where "
            "`base` is an export's `serving/` (numbered versions inside) or, "
            "from a package, `mkdir -p base/1 && tar -xzf serving.tar.gz -C "
            "base/1`; then `curl -d '{\"instances\": [\"a sentence\"]}' "
            "localhost:8501/v1/models/cmlm:predict`.",
            "", "## Fine-tuning", "",
            "`hub.KerasLayer(\"encoder\", trainable=True)` under a Keras 2 "
            "model fine-tunes every encoder weight (the preprocessor has "
            "none).",
            "", "## Evaluation", ""]
  lines += _evaluation(facts)
  lines += ["", "## Changelog", "",
            f"- Version {facts.version}: step {facts.step} of "
            f"`{os.path.dirname(facts.checkpoint_path)}`.", ""]
  return "\n".join(lines)


def _yaml(params) -> str:
  import yaml  # pylint: disable=g-import-not-at-top
  return yaml.safe_dump(params.as_dict(), default_flow_style=False,
                        sort_keys=False)


def card_facts(model_dir: str, checkpoint_path: str, step: int, version: int,
               embedding_dim: int, normalize: bool, has_pcr: bool = False,
               has_mlm: bool = False, eval_report: Optional[str] = None,
               title: Optional[str] = None) -> CardFacts:
  """Gathers a card's facts from a run; `eval_report` as `find_eval_report`."""
  params = run_dir.load_params(model_dir)
  report_path = find_eval_report(model_dir, eval_report)
  report = read_eval_report(report_path) if report_path else None
  name = os.path.basename(os.path.abspath(model_dir))
  return CardFacts(title=title or f"CMLM sentence encoder `{name}`",
                   checkpoint_path=checkpoint_path, step=step,
                   version=version, params=params,
                   embedding_dim=embedding_dim, normalize=normalize,
                   has_pcr=has_pcr, has_mlm=has_mlm, eval_report=report,
                   eval_report_path=report_path or "")
