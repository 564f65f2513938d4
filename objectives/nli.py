"""Cross-lingual NLI fine-tuning as an objective (paper section 4.3).

A 3-way classifier (`modeling.nli_head.NliHead`) on [u, v, |u - v|, u * v]
with the encoder trainable, usually started from a CMLM run through
`task.init_checkpoint`; premise and hypothesis come in independently drawn
languages when the data lists translations (`data_pipelines/nli_data.py`).
"""
import dataclasses

import tensorflow as tf
import tf_keras

from cmlm.data_pipelines import nli_data
from cmlm.data_pipelines import unk_rate
from cmlm.modeling import losses
from cmlm.modeling.nli_head import NliHead
from cmlm.modeling.nli_head import sentence_pair_embeddings
from cmlm.objectives import base


@dataclasses.dataclass
class NliObjectiveConfig(base.with_data(nli_data.NliDataConfig)):
  type: str = "nli"
  num_classes: int = 3
  # > 0: a ReLU layer of this size before the softmax layer (a two-layer
  # classifier; `NliHead`).
  hidden_size: int = 0


@base.register_objective("nli")
class NliObjective(base.Objective):
  """Premise/hypothesis classification through the sentence encoder."""
  config_cls = NliObjectiveConfig

  def check_data(self, data_config):
    nli_data.NliDataLoader(data_config, self.tokenization,
                           self.vocab)  # checks paths

  def build_inputs(self, data_config, input_context=None):
    return nli_data.NliDataLoader(data_config, self.tokenization,
                                  self.vocab).load(input_context)

  def text_sample(self, data_config, max_sentences):
    # The premises and hypotheses of each translation's first rows.
    sentences = []
    files = nli_data.translation_files(data_config.input_path)
    per_file = max(1, max_sentences // (2 * len(files)))
    for path in files.values():
      rows, _ = nli_data.read_nli(path, max_rows=per_file)
      sentences.extend(unk_rate.sides(rows, 2 * per_file))
    return sentences

  def build_head(self, encoder):
    return NliHead(self.config.num_classes,
                   initializer=tf_keras.initializers.TruncatedNormal(
                       stddev=self.model_config.encoder.initializer_range),
                   hidden_size=self.config.hidden_size, name="nli_head")

  def call(self, encoder, head, state, features, training=None):
    del state
    u, v = sentence_pair_embeddings(encoder, features, "premise",
                                    "hypothesis", training=training)
    return dict(logits=head(u, v))

  def compute_loss(self, features, outputs):
    return losses.classification_loss(features["label"], outputs["logits"])

  def build_metrics(self):
    return [tf_keras.metrics.SparseCategoricalAccuracy(name="nli_accuracy")]

  def update_metrics(self, metrics, features, outputs):
    metrics["nli_accuracy"].update_state(features["label"], outputs["logits"])

  def dummy_features(self, batch_size: int = 1):
    ids = tf.ones([batch_size, self.tokenization.seq_length], tf.int32)
    features = {"label": tf.zeros([batch_size], tf.int32)}
    for side in ("premise", "hypothesis"):
      features.update({f"{side}_input_word_ids": ids,
                       f"{side}_input_mask": ids,
                       f"{side}_input_type_ids": tf.zeros_like(ids)})
    return features
