"""The cross-lingual NLI head (paper section 4.3).

"Given a premise sentence u in language l1 and a hypothesis sentence v in
language l2, we train a 3-way classifier on the concatenation of
[u, v, |u - v|, u * v]. Weights of transformer encoders are also updated."
"""
import tensorflow as tf
import tf_keras

from modeling.sentence_encoder import SentenceEncoder

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def pair_features(u, v):
  """[u, v, |u - v|, u * v]: `[batch, 4 * hidden]`."""
  return tf.concat([u, v, tf.abs(u - v), u * v], axis=-1)


class NliModel(tf_keras.Model):
  """Premise and hypothesis through one trainable encoder, then a classifier.

  Inputs: `premise_{input_word_ids,input_mask,input_type_ids}` and
  `hypothesis_*`, int32 `[batch, seq_length]`. Output: `logits`
  `[batch, num_classes]`.
  """

  def __init__(self, encoder: SentenceEncoder, num_classes: int = 3,
               initializer="glorot_uniform", **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.classifier = tf_keras.layers.Dense(
        num_classes, kernel_initializer=initializer, name="nli_classifier")

  def call(self, features, training=None):
    u, v = (self.encoder({key: features[f"{side}_{key}"]
                          for key in ENCODER_KEYS},
                         training=training)["pooled_output"]
            for side in ("premise", "hypothesis"))
    return dict(logits=self.classifier(pair_features(u, v)))

  @property
  def checkpoint_items(self):
    """The encoder alone, so CMLM checkpoints initialise it."""
    return dict(encoder=self.encoder)
