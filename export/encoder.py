"""The encoder SavedModel, in Model Garden's TF-Hub convention.

As `official/nlp/tools/export_tfhub_lib.export_model` does for BERT:

    encoder = hub.KerasLayer(path, trainable=True)
    outputs = encoder(dict(input_word_ids=..., input_mask=...,
                           input_type_ids=...))  # int32 [batch, seq_length]
    outputs["default"]          # [batch, hidden], the embedding as trained
    outputs["pooled_output"]    # the same tensor
    outputs["sequence_output"]  # [batch, seq_length, hidden]
    outputs["encoder_outputs"]  # per layer, [batch, seq_length, hidden]

"The sentence embedding as trained" is the config's pooling (mean by default,
or cls / max) of the sequence output, the pooling head's output for a run
with one (`model.pooling_head`; a frozen core stays frozen under
`hub.KerasLayer(trainable=True)`), or for `sentence_representation="proj"`
the mean of the projected vectors: BERT's [CLS] pooler is not on CMLM's path,
so unlike a BERT export `pooled_output` is not the pooler's output.

With `with_mlm`, `encoder.mlm(dict(..., masked_lm_positions=...))` adds
`mlm_logits` `[batch, num_predictions, vocab_size]`: CMLM's MLM head (tied to
the word embeddings) read on the input's own sequence output, without the
conditioning vectors of another sentence.
"""
import contextlib
import logging
from typing import Optional

import tensorflow as tf
import tf_keras

from cmlm.modeling.conditional_mlm import ConditionalMlmHead
from cmlm.modeling.siamese_encoder import SiameseEncoder

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
SIGNATURE_NAME = "serving_default"


def encoder_inputs():
  """Keras inputs of the TF-Hub encoder API: int32 `[batch, seq_length]`."""
  return {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
          for name in INPUT_NAMES}


def build_export_encoder(trained: SiameseEncoder,
                         mlm_head: Optional[ConditionalMlmHead] = None
                         ) -> tf_keras.Model:
  """A functional Keras model over the trained encoder's layers.

  The exported model holds only what computes the embedding: the transformer,
  the pooling, and the projection head only when the embedding is "proj", so
  `hub.KerasLayer(trainable=True)` fine-tunes exactly those variables (BERT's
  [CLS] pooler stays frozen, as in training).

  Args:
    trained: the run's `SiameseEncoder`.
    mlm_head: CMLM's head, to attach the `.mlm` subobject (None: no `.mlm`).
  """
  uses_projection = trained.sentence_representation == "proj"
  encoder = SiameseEncoder(
      trained.transformer, pooling=trained.pooling.mode,
      sentence_representation=trained.sentence_representation,
      projection_head=trained.projection_head if uses_projection else None,
      pooling_head=trained.pooling_head,
      trainable_core=trained.trainable_core,
      name="sentence_encoder")
  inputs = encoder_inputs()
  outputs = encoder(inputs)
  core_model = tf_keras.Model(inputs=inputs, outputs=outputs,
                              name="cmlm_encoder")
  if mlm_head is not None:
    if mlm_head.skip:
      raise ValueError(
          "--export_mlm is not available for the 'skip' architecture: its MLM "
          "head also reads another sentence's projected vectors.")
    mlm_inputs = encoder_inputs()
    mlm_inputs["masked_lm_positions"] = tf_keras.Input(
        shape=(None,), dtype=tf.int32, name="masked_lm_positions")
    mlm_outputs = dict(encoder({k: mlm_inputs[k] for k in INPUT_NAMES}))
    # [batch, num_predictions, vocab_size]
    mlm_outputs["mlm_logits"] = mlm_head.masked_lm(
        mlm_outputs["sequence_output"],
        masked_positions=mlm_inputs["masked_lm_positions"])
    # As export_tfhub_lib: keep the MLM head's weights out of the core model.
    core_model._auto_track_sub_layers = False  # pylint: disable=protected-access
    core_model.mlm = tf_keras.Model(inputs=mlm_inputs, outputs=mlm_outputs,
                                    name="cmlm_encoder_mlm")
  return core_model


def export_encoder(core_model: tf_keras.Model, path: str, vocab_file: str,
                   lower_case: bool) -> None:
  """Writes `core_model` (see `build_export_encoder`) as a SavedModel.

  Like Model Garden's BERT encoders, it also carries the vocabulary (an
  asset) and `do_lower_case`, for users who tokenize by themselves.
  """
  core_model.vocab_file = tf.saved_model.Asset(vocab_file)
  core_model.do_lower_case = tf.Variable(lower_case, trainable=False,
                                         name="do_lower_case")
  with _quiet_keras_warnings():
    core_model.save(path, include_optimizer=False, save_format="tf",
                    signatures={SIGNATURE_NAME: _serving_signature(core_model)})


def _serving_signature(core_model: tf_keras.Model):
  """`serving_default` with the API's names (Keras would use layer names).

  Inputs `input_word_ids`, `input_mask`, `input_type_ids` int32
  `[batch, seq_length]`; outputs `default` and `pooled_output` float32
  `[batch, hidden]`, `sequence_output` and `encoder_outputs_<layer>` float32
  `[batch, seq_length, hidden]`.
  """
  specs = [tf.TensorSpec([None, None], tf.int32, name=name)
           for name in INPUT_NAMES]

  @tf.function(input_signature=specs, autograph=False)
  def serve(input_word_ids, input_mask, input_type_ids):
    outputs = core_model(dict(input_word_ids=input_word_ids,
                              input_mask=input_mask,
                              input_type_ids=input_type_ids), training=False)
    named = {key: outputs[key]
             for key in ("default", "pooled_output", "sequence_output")}
    for layer, output in enumerate(outputs["encoder_outputs"]):
      named[f"encoder_outputs_{layer}"] = output
    return named
  return serve


@contextlib.contextmanager
def _quiet_keras_warnings():
  """Hides Keras's save-time warnings that do not apply to this export.

  `SiameseEncoder` has no `get_config` (Keras warns once per traced layer):
  TF-Hub users load the SavedModel's traced functions, never the Python
  class, so there is nothing to fix for them.
  """
  logger = tf.get_logger()
  level = logger.level
  logger.setLevel(logging.ERROR)
  try:
    yield
  finally:
    logger.setLevel(level)
