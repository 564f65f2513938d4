"""MiSAD's head: the MLM head over S and the sentence pooler of E^w, E^R, E^S.

Section 3.2 of Li et al. 2020: "we use the pooled output of the [CLS] token
as sequence embeddings". In BERT, the pooled output is a dense layer with
tanh over the last layer's [CLS] state; the reference code (`run_mse.py`)
replaces BERT's pooler with a freshly initialised `BertPooler` and trains it
with the objective. `MisadHead(pooler=True)` is that: the garden's encoders
leave BERT's own pooler frozen and off the path (`modeling/siamese_encoder`),
so the pooler is the objective's, checkpointed with its head
(`<name>_head/pooler`), never exported. The sentence vector the garden
evaluates stays the encoder's `default` (the paper, too, evaluates with
mean pooling, section 4).
"""
import tensorflow as tf
import tf_keras

from cmlm.modeling.conditional_mlm import ConditionalMlmHead


class MisadHead(ConditionalMlmHead):
  """The MLM head tied to the embeddings (no skip) and, with `pooler`, a
  dense + tanh layer over [CLS] (`pool`)."""

  def __init__(self, transformer, pooler: bool = True,
               pooler_initializer_range: float = 0.02, **kwargs):
    kwargs.pop("skip", None)
    super().__init__(transformer, skip=False, **kwargs)
    self.use_pooler = pooler
    self._pooler_initializer_range = pooler_initializer_range
    if pooler:
      hidden_size = transformer.get_config()["hidden_size"]
      self.pooler = tf_keras.layers.Dense(
          hidden_size, activation="tanh",
          kernel_initializer=tf_keras.initializers.TruncatedNormal(
              stddev=pooler_initializer_range), name="pooler")
      self.pooler.build([None, hidden_size])

  def pool(self, sequence_output):
    """`[batch, hidden]`: tanh(W h_[CLS] + b) of `[batch, time, hidden]`."""
    if not self.use_pooler:
      raise ValueError("This MisadHead has no pooler (pooler=False).")
    return self.pooler(sequence_output[:, 0])

  def get_config(self):
    config = super().get_config()
    config.pop("skip", None)
    return dict(config, pooler=self.use_pooler,
                pooler_initializer_range=self._pooler_initializer_range)
