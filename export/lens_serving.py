"""The text-to-embedding SavedModel of a lens run, with binary vectors.

A run with a lens (contextual lensing, Kiros et al. 2020; `model.lens`)
exports the same serving model as any run (`export.serving`: its
`serving_default` embedding is the lens output), plus one signature for the
sparse binary vectors of section 4.2:

    signature serving_binary:
      inputs:  sentences        tf.string  [batch]
      outputs: binary           tf.float32 [batch, D]  1.0 where s >= threshold
               active_fraction  tf.float32 [batch]     the share of 1.0s

thresholded on the lens output itself (before any L2 normalisation) at
`model.lens.binary_threshold` (the paper: 1.0, about 2.5% active), which the
SavedModel keeps as the variable `binary_threshold`. Hamming or Jaccard
similarity of these vectors is what `cmlm eval --binary_threshold` scores.
"""
from typing import Optional

import tensorflow as tf
import tf_keras

from export import serving
from export.preprocessor import STRING_BATCH
from export.preprocessor import Preprocessor
from modeling import length_chunks
from modeling import lenses
from modeling import principal_component_removal as pcr

BINARY_SIGNATURE_NAME = "serving_binary"
BINARY_OUTPUT_NAME = "binary"
ACTIVE_FRACTION_NAME = "active_fraction"


class LensedTextEmbedding(serving.TextEmbedding):
  """`serving.TextEmbedding` plus `serve_binary` (see the module doc)."""

  def __init__(self, preprocessor: Preprocessor, encoder: tf_keras.Model,
               normalize: bool = True,
               components: Optional[pcr.LanguageComponents] = None,
               binary_threshold: float = 1.0):
    super().__init__(preprocessor, encoder, normalize, components)
    self.binary_threshold = tf.Variable(binary_threshold, trainable=False,
                                        dtype=tf.float32,
                                        name="binary_threshold")

  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def serve_binary(self, sentences):
    """`[batch]` strings -> sparse binary vectors of the lens output."""
    # [batch, D], on length-ordered chunks as `serving_default` reads them
    embedding = length_chunks.encode_by_length(
        self._encode, self.preprocessor(sentences), self._hidden_size)
    binary = lenses.binary_vectors(embedding, self.binary_threshold)
    return {BINARY_OUTPUT_NAME: binary,
            ACTIVE_FRACTION_NAME: tf.reduce_mean(binary, axis=1)}


def export_text_embedding(path: str, preprocessor: Preprocessor,
                          encoder: tf_keras.Model, normalize: bool = True,
                          components: Optional[pcr.LanguageComponents] = None,
                          lens: Optional[lenses.LensConfig] = None):
  """`serving.export_text_embedding`, with `serving_binary` when `lens` is
  a lens (type other than "none")."""
  if lens is None or lens.type == "none":
    return serving.export_text_embedding(path, preprocessor, encoder,
                                         normalize, components)
  model = LensedTextEmbedding(preprocessor, encoder, normalize, components,
                              lens.binary_threshold)
  signatures = {
      serving.SIGNATURE_NAME: model.serve.get_concrete_function(),
      BINARY_SIGNATURE_NAME: model.serve_binary.get_concrete_function()}
  if components is not None:
    signatures[serving.PCR_SIGNATURE_NAME] = (
        model.serve_with_language.get_concrete_function())
  tf.saved_model.save(model, path, signatures=signatures)
  return model
