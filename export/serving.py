"""The text-to-embedding SavedModel, for TF Serving and `hub.KerasLayer`.

One SavedModel maps a batch of UTF-8 sentences to their embeddings, with the
training tokenization inside (TF-Hub's "text embeddings from text inputs"
API, https://www.tensorflow.org/hub/common_saved_model_apis/text):

    signature serving_default:
      inputs:  sentences  tf.string  [batch]
      outputs: embedding  tf.float32 [batch, hidden]

    embeddings = hub.load(path)(tf.constant(sentences))  # [batch, hidden]

It is written as version `<base>/<version>/` of TF Serving's layout; see
`training.atomic` for how a version appears all at once. Its
`assets.extra/tf_serving_warmup_requests` holds a few requests of each
signature, which TF Serving runs before the version serves (`export.warmup`).
"""
from typing import Optional

import tensorflow as tf
import tf_keras

from cmlm.data_pipelines.tokenization import STRING_BATCH
from cmlm.export import warmup
from cmlm.export.preprocessor import Preprocessor
from cmlm.modeling import principal_component_removal as pcr
from cmlm.modeling.length_chunks import encode_by_length
from cmlm.modeling.pooling_heads import PoolingHead

from cmlm.inference.layout import INPUT_NAME
from cmlm.inference.layout import OUTPUT_NAME
from cmlm.inference.layout import SIGNATURE_NAME
# With principal components fitted (`python -m cmlm pcr`): sentences and their
# language codes -> embeddings without that language's first component
# (paper section 5.2); a code with no fitted component changes nothing.
PCR_SIGNATURE_NAME = "serving_pcr"
LANGUAGES_NAME = "languages"
LANGUAGE_BATCH = tf.TensorSpec([None], tf.string, name=LANGUAGES_NAME)


class TextEmbedding(tf.Module):
  """Strings to the sentence embedding: preprocessor, then encoder.

  Args:
    preprocessor: the training tokenization (`export.preprocessor`).
    encoder: the exported encoder model (`export.encoder`).
    normalize: L2-normalise the embeddings, so a dot product is the cosine.
    components: per-language principal components, for `serving_pcr`.
  """

  def __init__(self, preprocessor: Preprocessor, encoder: tf_keras.Model,
               normalize: bool = True,
               components: Optional[pcr.LanguageComponents] = None):
    super().__init__(name="text_embedding")
    self.preprocessor = preprocessor
    # Only the encoder's variables are saved beside the graph. Tracking the
    # Keras model itself would also serialize its Keras layers and traces,
    # which serving never reads (and which doubles the export time).
    self.encoder_variables = list(encoder.variables)
    self._encode = lambda inputs: encoder(inputs, training=False)["default"]
    self._hidden_size = encoder.output["default"].shape[-1]
    self.normalize = normalize
    self.l2_normalized = tf.Variable(normalize, trainable=False,
                                     name="l2_normalized")
    self.pcr = (pcr.PrincipalComponentRemoval(components)
                if components is not None else None)

  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def __call__(self, sentences):
    """`[batch]` strings -> float32 `[batch, hidden]`."""
    return self._embed(sentences)

  def raw_embedding(self, sentences):
    """The encoder's `default` output, before PCR and normalisation
    `[batch, hidden]`, on length-ordered chunks (`encode_by_length`)."""
    inputs = self.preprocessor(sentences)  # padded to the training length
    return encode_by_length(self._encode, inputs, self._hidden_size)

  def _embed(self, sentences, languages=None):
    embedding = self.raw_embedding(sentences)
    if languages is not None and self.pcr is not None:
      # (SavedModel traces `serve_with_language` even without components.)
      embedding = self.pcr(embedding, languages)
    if self.normalize:
      embedding = tf.math.l2_normalize(embedding, axis=-1)
    return embedding

  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def token_lengths(self, sentences):
    """int32 `[batch]`: the tokens each sentence fills in the encoder.

    `Embedder.embed` (modeling/embedder.py) orders sentences by it, so that a batch
    holds sentences of one length and little padding is computed.
    """
    return tf.reduce_sum(self.preprocessor(sentences)["input_mask"], axis=1)

  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def serve(self, sentences):
    """The serving signature: named inputs and outputs."""
    return {OUTPUT_NAME: self.__call__(sentences)}

  @tf.function(input_signature=[STRING_BATCH, LANGUAGE_BATCH],
               autograph=False)
  def serve_with_language(self, sentences, languages):
    """`serving_pcr`: the language's principal component removed first."""
    return {OUTPUT_NAME: self._embed(sentences, languages)}


def export_text_embedding(path: str, preprocessor: Preprocessor,
                          encoder: tf_keras.Model, normalize: bool = True,
                          components: Optional[pcr.LanguageComponents] = None,
                          pooling_head: Optional[PoolingHead] = None
                          ) -> TextEmbedding:
  """Writes the text-to-embedding SavedModel to `path` (a fresh directory),
  with the signatures `pooling_head` (the encoder's, if any) adds, and TF
  Serving's warm-up requests for them."""
  model = TextEmbedding(preprocessor, encoder, normalize, components)
  signatures = {SIGNATURE_NAME: model.serve.get_concrete_function()}
  if components is not None:
    signatures[PCR_SIGNATURE_NAME] = (
        model.serve_with_language.get_concrete_function())
  if pooling_head is not None:
    signatures.update(pooling_head.serving_signatures(model))
  tf.saved_model.save(model, path, signatures=signatures)
  warmup.write_warmup_requests(path, warmup.warmup_requests(
      signatures, components.languages if components is not None else ("en",)))
  return model
