"""The text-to-embedding SavedModel, for TF Serving and `hub.KerasLayer`.

One SavedModel maps a batch of UTF-8 sentences to their embeddings, with the
training tokenization inside (TF-Hub's "text embeddings from text inputs"
API, https://www.tensorflow.org/hub/common_saved_model_apis/text):

    signature serving_default:
      inputs:  sentences  tf.string  [batch]
      outputs: embedding  tf.float32 [batch, hidden]

    embeddings = hub.load(path)(tf.constant(sentences))  # [batch, hidden]

It is written as version `<base>/<version>/` of TF Serving's layout; see
`training.atomic` for how a version appears all at once.
"""
from typing import Optional

import tensorflow as tf
import tf_keras

from export.preprocessor import STRING_BATCH
from export.preprocessor import Preprocessor
from modeling import principal_component_removal as pcr

SIGNATURE_NAME = "serving_default"
INPUT_NAME = "sentences"
OUTPUT_NAME = "embedding"
# With principal components fitted (`python -m cmlm pcr`): sentences and their
# language codes -> embeddings without that language's first component
# (paper section 5.2); a code with no fitted component changes nothing.
PCR_SIGNATURE_NAME = "serving_pcr"
LANGUAGES_NAME = "languages"
LANGUAGE_BATCH = tf.TensorSpec([None], tf.string, name=LANGUAGES_NAME)
# Sentences the encoder reads at once. A larger batch runs as a loop over
# chunks of this many, so that the activations stay in the CPU's caches (on
# 2 cores, MiniLM read 256 sentences at once ~1.4x slower per sentence than
# in chunks of 32).
ENCODER_CHUNK = 32


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

  def _embed(self, sentences, languages=None):
    inputs = self.preprocessor(sentences)  # padded to the training length
    embedding = self._encode_in_chunks(inputs)
    if languages is not None and self.pcr is not None:
      # (SavedModel traces `serve_with_language` even without components.)
      embedding = self.pcr(embedding, languages)
    if self.normalize:
      embedding = tf.math.l2_normalize(embedding, axis=-1)
    return embedding

  def _encode_in_chunks(self, inputs):
    """The encoder's embeddings, `ENCODER_CHUNK` sentences at a time."""
    batch_size = tf.shape(inputs["input_mask"])[0]
    num_chunks = (batch_size + ENCODER_CHUNK - 1) // ENCODER_CHUNK

    def encode_chunk(index, embeddings):
      rows = slice(index * ENCODER_CHUNK, (index + 1) * ENCODER_CHUNK)
      chunk = {name: ids[rows] for name, ids in inputs.items()}
      # Padding is masked out of attention and pooling, so the encoder need
      # only read as far as the chunk's longest sentence: short sentences
      # cost a fraction of the full seq_length.
      longest = tf.maximum(
          tf.reduce_max(tf.reduce_sum(chunk["input_mask"], axis=1)), 1)
      chunk = {name: ids[:, :longest] for name, ids in chunk.items()}
      return index + 1, embeddings.write(index, self._encode(chunk))

    embeddings = tf.TensorArray(
        tf.float32, size=num_chunks, infer_shape=False,
        element_shape=tf.TensorShape([None, self._hidden_size]))
    _, embeddings = tf.while_loop(
        lambda index, _: index < num_chunks, encode_chunk,
        (tf.constant(0), embeddings), parallel_iterations=1)
    return embeddings.concat()  # [batch, hidden]

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
                          components: Optional[pcr.LanguageComponents] = None
                          ) -> TextEmbedding:
  """Writes the text-to-embedding SavedModel to `path` (a fresh directory)."""
  model = TextEmbedding(preprocessor, encoder, normalize, components)
  signatures = {SIGNATURE_NAME: model.serve.get_concrete_function()}
  if components is not None:
    signatures[PCR_SIGNATURE_NAME] = (
        model.serve_with_language.get_concrete_function())
  tf.saved_model.save(model, path, signatures=signatures)
  return model
