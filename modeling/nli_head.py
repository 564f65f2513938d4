"""The cross-lingual NLI head (paper section 4.3).

"Given a premise sentence u in language l1 and a hypothesis sentence v in
language l2, we train a 3-way classifier on the concatenation of
[u, v, |u - v|, u * v]. Weights of transformer encoders are also updated."
"""
import tensorflow as tf
import tf_keras

from cmlm.modeling.siamese_encoder import SiameseEncoder
from cmlm.modeling.siamese_encoder import build_from_input_shapes

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def pair_features(u, v):
  """[u, v, |u - v|, u * v]: `[batch, 4 * hidden]`."""
  return tf.concat([u, v, tf.abs(u - v), u * v], axis=-1)


def sentence_pair_embeddings(encoder: SiameseEncoder, features, first: str,
                             second: str, training=None):
  """(u, v) `[batch, hidden]`: the encoder's embeddings of `first_*` and
  `second_*` encoder inputs (e.g. "premise", "hypothesis")."""
  return tuple(encoder({key: features[f"{side}_{key}"]
                        for key in ENCODER_KEYS},
                       training=training)["pooled_output"]
               for side in (first, second))


@tf_keras.utils.register_keras_serializable(package="cmlm")
class NliHead(tf_keras.layers.Layer):
  """The 3-way classifier on [u, v, |u - v|, u * v] (section 4.3).

  With `hidden_size` > 0 it is a two-layer network: a ReLU layer of that
  size, then the softmax layer (a classifier trained over a frozen encoder
  often takes one).
  """

  def __init__(self, num_classes: int = 3, initializer="glorot_uniform",
               hidden_size: int = 0, **kwargs):
    super().__init__(**kwargs)
    self.num_classes = num_classes
    self.hidden_size = hidden_size
    self._initializer = tf_keras.initializers.get(initializer)
    self.hidden = (tf_keras.layers.Dense(
        hidden_size, activation="relu", kernel_initializer=self._initializer,
        name="nli_hidden") if hidden_size > 0 else None)
    self.classifier = tf_keras.layers.Dense(
        num_classes, kernel_initializer=self._initializer,
        name="nli_classifier")

  def call(self, u, v):
    features = pair_features(u, v)  # [batch, 4 * dim]
    if self.hidden is not None:
      features = self.hidden(features)  # [batch, hidden_size]
    return self.classifier(features)  # [batch, num_classes]

  def get_config(self):
    return dict(super().get_config(), num_classes=self.num_classes,
                initializer=tf_keras.initializers.serialize(
                    self._initializer), hidden_size=self.hidden_size)


@tf_keras.utils.register_keras_serializable(package="cmlm")
class NliModel(tf_keras.Model):
  """Premise and hypothesis through one trainable encoder, then `NliHead`.

  Inputs: `premise_{input_word_ids,input_mask,input_type_ids}` and
  `hypothesis_*`, int32 `[batch, seq_length]`. Output: `logits`
  `[batch, num_classes]`. Training runs the same pass through the NLI
  objective (`objectives/nli.py`).
  """

  def __init__(self, encoder: SiameseEncoder, num_classes: int = 3,
               initializer="glorot_uniform", **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.head = NliHead(num_classes, initializer, name="nli_head")

  def call(self, features, training=None):
    u, v = sentence_pair_embeddings(self.encoder, features, "premise",
                                    "hypothesis", training=training)
    return dict(logits=self.head(u, v))

  def get_config(self):
    head = self.head.get_config()
    return dict(super().get_config(), name=self.name, trainable=self.trainable,
                encoder=tf_keras.layers.serialize(self.encoder),
                num_classes=head["num_classes"],
                initializer=head["initializer"])

  @classmethod
  def from_config(cls, config, custom_objects=None):
    config = dict(config)
    if isinstance(config["encoder"], dict):
      config["encoder"] = tf_keras.layers.deserialize(
          config["encoder"], custom_objects=custom_objects)
    return cls(**config)

  def build_from_config(self, config):
    build_from_input_shapes(self, config["input_shape"])
