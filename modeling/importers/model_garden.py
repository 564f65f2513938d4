"""A Model Garden BERT checkpoint as our encoder.

A checkpoint holds Model Garden BERT weights with the encoder as `encoder=`
(Model Garden's BERT pretraining, `tf2_encoder_checkpoint_converter`, or
`tf.train.Checkpoint(encoder=...).save(...)`), of a `BertEncoderV2` (keys
by attribute: `encoder/_transformer_layers/0/_attention_layer/...`) or of
the functional `BertEncoder` (keys by layer index:
`encoder/layer_with_weights-4/_attention_layer/...`). A TF-Hub BERT
SavedModel, which holds the same weights under Model Garden's names, is
read by `tf_hub`.

Shapes give the architecture; the activation is Model Garden's "gelu", and
the encoder is taken as post-LayerNorm (BERT's), which the weights cannot
tell. A checkpoint needs `vocab_file` or a `vocab.txt` beside it.
"""
import os
import re
from typing import Dict, Optional

import numpy as np
import tensorflow as tf

from cmlm.modeling.importers import encoder_weights
from cmlm.modeling.importers import tf_hub

_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_ROOT = re.compile(r"^(.*?)(_embedding_layer|layer_with_weights-0)/embeddings"
                   + re.escape(_SUFFIX) + "$")
_EMBEDDINGS_V2 = {"_embedding_layer": "word_embeddings",
                  "_position_embedding_layer": "position_embedding",
                  "_type_embedding_layer": "type_embeddings",
                  "_embedding_norm_layer": "embeddings/layer_norm",
                  "_pooler_layer": "pooler_transform"}
_EMBEDDINGS_V1 = ("word_embeddings", "position_embedding", "type_embeddings",
                  "embeddings/layer_norm")
_BLOCK = [("_attention_layer/_query_dense/", "self_attention/query/"),
          ("_attention_layer/_key_dense/", "self_attention/key/"),
          ("_attention_layer/_value_dense/", "self_attention/value/"),
          ("_attention_layer/_output_dense/",
           "self_attention/attention_output/"),
          ("_attention_layer_norm/", "self_attention_layer_norm/"),
          ("_intermediate_dense/", "intermediate/"),
          ("_output_dense/", "output/"),
          ("_output_layer_norm/", "output_layer_norm/")]


def _block_name(rest: str) -> Optional[str]:
  for old, new in _BLOCK:
    if rest.startswith(old):
      return new + rest[len(old):]
  return None


def checkpoint_to_model_garden_names(reader) -> Dict[str, np.ndarray]:
  """The encoder's arrays of a checkpoint, by Model Garden variable name."""
  keys = reader.get_variable_to_shape_map()
  roots = sorted((m.group(1) for m in map(_ROOT.match, keys) if m),
                 key=lambda root: (not root.startswith("encoder/"), len(root)))
  if not roots:
    raise ValueError("it holds no BERT encoder (no word embedding table of a "
                     "BertEncoder or BertEncoderV2)")
  root = roots[0]
  names = {}  # checkpoint key -> Model Garden name
  if root + "_embedding_layer/embeddings" + _SUFFIX in keys:  # BertEncoderV2
    pattern = re.compile(re.escape(root) + r"(_\w+?)/(?:(\d+)/)?(.+)"
                         + re.escape(_SUFFIX))
    for key in keys:
      match = pattern.fullmatch(key)
      if not match:
        continue
      attribute, index, rest = match.groups()
      if attribute in _EMBEDDINGS_V2 and index is None:
        names[key] = f"{_EMBEDDINGS_V2[attribute]}/{rest}"
      elif attribute == "_transformer_layers" and _block_name(rest):
        names[key] = f"layer_{index}/{_block_name(rest)}"
  else:  # BertEncoder: layers in order, 4 embedding layers, blocks, pooler
    pattern = re.compile(re.escape(root) + r"layer_with_weights-(\d+)/(.+)"
                         + re.escape(_SUFFIX))
    matches = [m for m in map(pattern.fullmatch, keys) if m]
    blocks = sorted({int(m.group(1)) for m in matches if _block_name(
        m.group(2))})
    for match in matches:
      index, rest = int(match.group(1)), match.group(2)
      if index < len(_EMBEDDINGS_V1):
        names[match.group(0)] = f"{_EMBEDDINGS_V1[index]}/{rest}"
      elif index in blocks and _block_name(rest):
        names[match.group(0)] = (f"layer_{blocks.index(index)}/"
                                 f"{_block_name(rest)}")
      elif blocks and index == blocks[-1] + 1:
        names[match.group(0)] = f"pooler_transform/{rest}"
  return {name: reader.get_tensor(key) for key, name in names.items()}


def _find_vocab(source: str, vocab_file: Optional[str]) -> str:
  directory = source if tf.io.gfile.isdir(source) else os.path.dirname(source)
  vocab_file = vocab_file or os.path.join(directory, "vocab.txt")
  if not tf.io.gfile.exists(vocab_file):
    raise FileNotFoundError(
        f"No vocabulary for {source}: give --vocab_file=PATH (the WordPiece "
        f"vocab.txt the encoder was trained with); {vocab_file} does not "
        "exist.")
  return vocab_file


def read_model_garden(source: str, vocab_file: Optional[str] = None,
                      lower_case: Optional[bool] = None
                      ) -> encoder_weights.ImportedEncoder:
  """Reads a Model Garden checkpoint (module docstring); a TF-Hub
  SavedModel is read by `tf_hub.read_tf_hub`."""
  if tf_hub.is_tf_hub(source):
    return tf_hub.read_tf_hub(source, vocab_file, lower_case)
  checkpoint = (tf.train.latest_checkpoint(source)
                if tf.io.gfile.isdir(source) else source)
  if not checkpoint or not tf.io.gfile.exists(checkpoint + ".index"):
    raise FileNotFoundError(
        f"{source} is neither a SavedModel nor a checkpoint (a prefix such "
        "as DIR/ckpt-1000 with its .index, or a directory holding one).")
  try:
    weights = checkpoint_to_model_garden_names(
        tf.train.load_checkpoint(checkpoint))
  except (tf.errors.OpError, ValueError) as error:
    reason = str(error).strip().splitlines()[0] if str(error) else ""
    raise ValueError(f"The checkpoint {checkpoint} cannot be imported: "
                     f"{reason}.") from None
  return encoder_weights.ImportedEncoder(
      weights=weights, encoder=encoder_weights.infer_encoder_config(weights),
      vocab_file=_find_vocab(source, vocab_file),
      lower_case=True if lower_case is None else lower_case,
      source=f"Model Garden checkpoint {checkpoint}")
