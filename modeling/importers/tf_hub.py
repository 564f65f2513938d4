"""A TF-Hub BERT-API encoder SavedModel, with its preprocessor, as our encoder.

TF-Hub's text encoder API (tensorflow.org/hub/common_saved_model_apis/text):

    outputs = encoder(dict(input_word_ids=..., input_mask=...,
                           input_type_ids=...))  # int32 [batch, seq_length]
    outputs["sequence_output"]                   # [batch, seq_length, hidden]
    outputs["pooled_output"], outputs["default"]  # [batch, hidden]

and its preprocessor (`preprocessor.tokenize(strings)`, `preprocessor(strings)`
-> the encoder's inputs). The encoders `python -m cmlm export` writes
(export/encoder.py) and Model Garden's BERT export writes
(`official/nlp/tools/export_tfhub_lib.py`), such as Google's published
CMLM encoders, hold variables under Model Garden's names
(`transformer/layer_0/self_attention/query/kernel:0`). What is read:

* the weights: the encoder's variables, and its `.mlm` subobject's (an MLM
  head) when it has one; the architecture from their shapes
  (`encoder_weights.infer_encoder_config`);
* the vocabulary: the preprocessor's `vocab_file` asset (ours), else its
  one vocabulary file among its assets (Model Garden's), else the encoder's
  `vocab_file` asset (both exports set one), else `vocab_file`;
* casing and text normalization: the pair under which the garden's
  WordPiece tokenizer gives the preprocessor's own tokens on probe
  sentences made of the vocabulary's words (the `do_lower_case` a
  SavedModel states is tried first). Without a preprocessor: the encoder's
  `do_lower_case` and TF Text's normalization. `lower_case` fixes the
  casing;
* the sequence length: the preprocessor's packed length;
* the pooling: what the encoder's `default` output (else `pooled_output`)
  is of its `sequence_output` on probe inputs: the mean, the first token or
  the maximum over the real tokens. Anything else (BERT's [CLS] pooler in
  Model Garden's BERT export, CMLM's projections, a trained pooling head)
  is no pooling of ours: the run pools by mean, and a note says so.

The source's outputs on the probe inputs come along (`ReferenceOutputs`):
`training.import_run` checks the imported model against them.
"""
import os
from typing import Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from cmlm.modeling.importers import encoder_weights

ENCODER_DIR = "encoder"  # an export's parts (export/publish.py)
PREPROCESSOR_DIR = "preprocessor"
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
PROBE_LENGTH = 16  # tokens of the longest probe input
# Text where TF Text's and Hugging Face's normalizations differ: accents,
# case folding, format and control characters, CJK, ligatures.
_AWKWARD = ["Straße Ölçek café naïve", "ΟΔΥΣΣΕΥΣ σας", "中文字符 test",
            "hello\u00adworld ﬁne", "e\u0301 a\u00a0b Ⅷ", "x\ufffdy ＡＢＣ"]


def is_saved_model(path: str) -> bool:
  return tf.io.gfile.exists(os.path.join(path, "saved_model.pb"))


def split_source(source: str) -> Tuple[str, Optional[str]]:
  """(encoder dir, preprocessor dir or None) of `--source`:
  `ENCODER_DIR,PREPROCESSOR_DIR`, an export holding `encoder/` and
  `preprocessor/`, or an encoder SavedModel alone."""
  if "," in source and not tf.io.gfile.exists(source):
    encoder_dir, _, preprocessor_dir = source.partition(",")
    return encoder_dir.strip(), preprocessor_dir.strip() or None
  parts = [os.path.join(source, part)
           for part in (ENCODER_DIR, PREPROCESSOR_DIR)]
  if not is_saved_model(source) and all(map(is_saved_model, parts)):
    return parts[0], parts[1]
  return source, None


def is_tf_hub(source: str) -> bool:
  """Whether `--source` names a TF-Hub encoder (see `split_source`)."""
  return is_saved_model(split_source(source)[0])


def read_tf_hub(source: str, vocab_file: Optional[str] = None,
                lower_case: Optional[bool] = None
                ) -> encoder_weights.ImportedEncoder:
  """Reads `source` (`split_source`'s forms); see the module docstring."""
  encoder_dir, preprocessor_dir = split_source(source)
  for path, what in ((encoder_dir, "encoder"),
                     (preprocessor_dir, "preprocessor")):
    if path is not None and not is_saved_model(path):
      raise FileNotFoundError(f"The {what} {path} is not a SavedModel (no "
                              "saved_model.pb).")
  encoder = tf.saved_model.load(encoder_dir)
  weights = _weights(encoder)
  config = encoder_weights.infer_encoder_config(weights)
  preprocessor = (tf.saved_model.load(preprocessor_dir)
                  if preprocessor_dir else None)
  vocab_file = _vocab_file(encoder, encoder_dir, preprocessor,
                           preprocessor_dir, vocab_file)
  stated = _stated_lower_case(preprocessor) if preprocessor else None
  if stated is None:
    stated = _stated_lower_case(encoder)
  notes = []
  if preprocessor is None:
    text_normalization = "tf_text"
    lower_case = (stated if stated is not None else True
                  ) if lower_case is None else lower_case
    seq_length = None
  else:
    (lower_case, text_normalization), mismatch = tokenization_of(
        preprocessor, vocab_file, lower_case, stated)
    if mismatch:
      notes.append(f"the source's preprocessor tokenizes {mismatch} probe "
                   "sentences differently from the garden's tokenizer "
                   f"({'uncased' if lower_case else 'cased'}, "
                   f"{text_normalization} normalization)")
    seq_length = int(preprocessor(tf.constant(["a"]))["input_word_ids"]
                     .shape[1])
  inputs = probe_inputs(config.vocab_size, config.max_position_embeddings)
  outputs = _call_encoder(encoder, inputs)
  sequence = outputs["sequence_output"]
  embedding = outputs.get("default", outputs.get("pooled_output"))
  pooling = pooling_of(embedding, sequence, inputs["input_mask"])
  if pooling is None:
    notes.append(_pooling_note(embedding, sequence, weights))
  return encoder_weights.ImportedEncoder(
      weights=weights, encoder=config, vocab_file=vocab_file,
      lower_case=lower_case, text_normalization=text_normalization,
      pooling=pooling or "mean", seq_length=seq_length,
      source=f"TF-Hub SavedModel {encoder_dir}" + (
          f" with preprocessor {preprocessor_dir}" if preprocessor_dir
          else ""),
      reference=encoder_weights.ReferenceOutputs(
          inputs=inputs, sequence_output=sequence,
          embedding=embedding if pooling else None),
      notes=notes)


def _weights(encoder) -> Dict[str, np.ndarray]:
  """Arrays by Model Garden name: the encoder's, then its MLM head's."""
  if not hasattr(encoder, "variables"):
    raise ValueError("The encoder does not follow TF-Hub's reusable "
                     "SavedModel API: it has no .variables.")
  variables = list(encoder.variables)
  if hasattr(encoder, "mlm"):  # exported with the MLM head (`.mlm`)
    variables += list(encoder.mlm.variables)
  weights = {}
  for variable in variables:
    name = encoder_weights.canonical_name(variable.name)
    if name and name not in weights:
      weights[name] = variable.numpy()
  return weights


def _asset_path(saved_model, attribute: str) -> Optional[str]:
  asset = getattr(saved_model, attribute, None)
  if asset is None or not hasattr(asset, "asset_path"):
    return None
  return asset.asset_path.numpy().decode("utf-8")


def _vocab_file(encoder, encoder_dir: str, preprocessor,
                preprocessor_dir: Optional[str],
                vocab_file: Optional[str]) -> str:
  """The vocabulary, from the first place that has one (module docstring)."""
  if vocab_file:
    if not tf.io.gfile.exists(vocab_file):
      raise FileNotFoundError(f"--vocab_file={vocab_file} does not exist.")
    return vocab_file
  found = preprocessor is not None and (
      _asset_path(preprocessor, "vocab_file") or
      _one_vocabulary_asset(preprocessor_dir))
  found = found or _asset_path(encoder, "vocab_file")
  if not found:
    where = (f"{preprocessor_dir} nor {encoder_dir}" if preprocessor_dir
             else f"{encoder_dir} (and no preprocessor was given)")
    raise FileNotFoundError(
        f"No vocabulary in {where}: give --vocab_file=PATH, the WordPiece "
        "vocab.txt the encoder was trained with, or the preprocessor as "
        "--source=ENCODER_DIR,PREPROCESSOR_DIR.")
  return found


def _one_vocabulary_asset(saved_model_dir: str) -> Optional[str]:
  """The vocabulary among a SavedModel's assets: its one `.txt` file."""
  assets = os.path.join(saved_model_dir, "assets")
  names = (sorted(n for n in tf.io.gfile.listdir(assets) if n.endswith(".txt"))
           if tf.io.gfile.isdir(assets) else [])
  return os.path.join(assets, names[0]) if len(names) == 1 else None


def _stated_lower_case(saved_model) -> Optional[bool]:
  stated = getattr(saved_model, "do_lower_case", None)
  return None if stated is None else bool(stated.numpy())


def _probe_sentences(vocab: List[str]) -> List[str]:
  """Sentences of the vocabulary's words: in lower, upper and title case,
  with a control, format or space character inside a word (which one
  normalization drops and the other splits at), and text the two
  normalizations fold apart."""
  tokens = set(vocab)
  words = [w for w in vocab if w.isalpha() and w.islower() and len(w) > 2
           and w.upper() not in tokens][:6] or ["the", "cat"]
  inside = [w[:1] + mark + w[1:] for w, mark in zip(
      words * 5, ("\x00", "\x07", "\u200b", "\u00ad", "\u202a"))]
  return ([" ".join(words), " ".join(w.upper() for w in words),
           " ".join(w.capitalize() for w in words[::-1]), " ".join(inside),
           "\u00a0".join(words)] + _AWKWARD)


def tokenization_of(preprocessor, vocab_file: str,
                    lower_case: Optional[bool] = None,
                    stated: Optional[bool] = None):
  """((lower_case, text_normalization), how many probe sentences the best
  pair still tokenizes differently from `preprocessor`, a loaded TF-Hub
  preprocessor over `vocab_file`): `lower_case` fixes the casing, `stated`
  is tried first."""
  sentences = _probe_sentences(vocabulary.load_vocab(vocab_file))
  theirs = preprocessor.tokenize(tf.constant(sentences))
  theirs = theirs.merge_dims(1, -1).to_list()
  casings = ([lower_case] if lower_case is not None else
             [stated, not stated] if stated is not None else [True, False])
  best = None
  for casing in casings:
    for normalization in tokenization.TEXT_NORMALIZATIONS:
      ours = tokenization.WordPieceTokenizer(
          vocab_file, PROBE_LENGTH, lower_case=casing,
          text_normalization=normalization).tokenize(tf.constant(sentences))
      mismatch = sum(a != b for a, b in zip(ours.to_list(), theirs))
      if best is None or mismatch < best[1]:
        best = ((casing, normalization), mismatch)
      if not mismatch:
        return best
  return best


def probe_inputs(vocab_size: int, max_positions: int
                 ) -> Dict[str, np.ndarray]:
  """Encoder inputs of random ordinary tokens, int32 `[3, length]`: rows of
  the whole length, two thirds of it and two tokens, the rest padding."""
  length = max(2, min(PROBE_LENGTH, max_positions))
  rng = np.random.default_rng(0)
  low = min(len(vocabulary.SPECIAL_TOKENS), vocab_size - 1)
  ids = rng.integers(low, vocab_size, size=(3, length))
  lengths = np.array([length, max(2, 2 * length // 3), 2])
  mask = (np.arange(length) < lengths[:, np.newaxis]).astype(np.int32)
  return {"input_word_ids": (ids * mask).astype(np.int32),
          "input_mask": mask, "input_type_ids": np.zeros_like(mask)}


def _call_encoder(encoder, inputs) -> Dict[str, np.ndarray]:
  """The encoder's outputs on `inputs`, as `hub.KerasLayer` calls it."""
  tensors = {name: tf.constant(inputs[name]) for name in INPUT_NAMES}
  try:
    outputs = encoder(tensors, training=False)
  except (TypeError, ValueError):
    outputs = encoder.signatures["serving_default"](**tensors)
  if not isinstance(outputs, dict) or "sequence_output" not in outputs:
    raise ValueError("The encoder does not follow TF-Hub's BERT encoder API: "
                     "its outputs have no sequence_output.")
  return {key: value.numpy() for key, value in outputs.items()
          if hasattr(value, "numpy")}


def pooling_of(embedding: np.ndarray, sequence_output: np.ndarray,
               input_mask: np.ndarray) -> Optional[str]:
  """"mean", "cls" or "max" when `embedding` `[batch, hidden]` is that
  pooling of `sequence_output` `[batch, length, hidden]` over the real
  tokens; None otherwise."""
  real = input_mask[..., np.newaxis] > 0
  candidates = {
      "mean": (sequence_output * real).sum(1) / real.sum(1),
      "cls": sequence_output[:, 0],
      "max": np.where(real, sequence_output, -np.inf).max(1)}
  tolerance = 1e-4 * max(1.0, float(np.abs(embedding).max()))
  for mode, pooled in candidates.items():
    if pooled.shape == embedding.shape and np.allclose(
        pooled, embedding, rtol=1e-4, atol=tolerance):
      return mode
  return None


def _pooling_note(embedding, sequence_output, weights) -> str:
  kernel = weights.get("pooler_transform/kernel")
  if kernel is not None and kernel.shape[0] == sequence_output.shape[-1]:
    pooler = np.tanh(sequence_output[:, 0] @ kernel +
                     weights["pooler_transform/bias"])
    if pooler.shape == embedding.shape and np.allclose(pooler, embedding,
                                                       atol=1e-4):
      return ("the source's sentence vector is BERT's [CLS] pooler, which "
              "CMLM does not use: the run pools by mean, as the paper does")
  return ("the source's sentence vector is no mean, CLS or max pooling of "
          "its sequence output (a projection or a trained pooling head?): "
          "the run pools by mean, so its embeddings are not the source's")
