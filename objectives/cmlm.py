"""Conditional masked language modeling as an objective (paper sections 2-3).

Features: the CMLM pipeline's (`data_pipelines/cmlm_dataloader.py`): s1 and
masked s2 encoder inputs, `masked_lm_positions/ids/weights`. Forward:
`modeling.conditional_mlm.conditional_mlm_outputs` (s1 -> v -> P(v) appended
to s2's embeddings, same encoder). Head: `ConditionalMlmHead` (MLM head tied
to the word embeddings; table 7's "skip" as an option). Loss:
`base.global_masked_lm_loss`: `modeling.losses.conditional_mlm_loss`
normalised by the masked-token count of the *global* batch, so replicas add
up to exactly the loss (and gradient) one device would compute on the whole
batch.
"""
import dataclasses

import tensorflow as tf

from cmlm.data_pipelines import cmlm_dataloader
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import unk_rate
from cmlm.modeling import model_builder
from cmlm.modeling.conditional_mlm import conditional_mlm_outputs
from cmlm.modeling.conditional_mlm import unconditioned_mlm_outputs
from cmlm.objectives import base


@dataclasses.dataclass
class CmlmObjectiveConfig(base.with_data(cmlm_dataloader.CmlmDataConfig)):
  """CMLM: its sentence-pair data and its MLM head.

  Attributes:
    skip: the "skip" architecture of table 7.
    condition: false removes the conditioning: plain MLM of s2 with the same
      encoder and head (`unconditioned_mlm_outputs`), the baseline of
      `experiments/cmlm_vs_mlm.py`; s1 is not read.
    mlm_activation: activation of the MLM head's transform layer.
    mlm_initializer_range: stddev of the MLM head's initializer.
  """
  type: str = "cmlm"
  skip: bool = False
  condition: bool = True
  mlm_activation: str = "gelu"
  mlm_initializer_range: float = 0.02


@base.register_objective("cmlm")
class CmlmObjective(base.MaskedTokenObjective):
  """Predict s2's masked tokens given s1's sentence vector."""
  config_cls = CmlmObjectiveConfig

  def validate(self, mode):
    if self.config.condition and not self.model_config.num_projections:
      raise ValueError(
          f"task.objectives.{self.name} conditions s2 on the projections of "
          "s1's vector (section 2): model.num_projections must be 1 or more "
          "(15 in the paper), got 0.")
    super().validate(mode)

  def check_data(self, data_config):
    cmlm_dataloader.validate_config(data_config, self.tokenization,
                                    self.vocab)
    if self.config.skip and not self.config.condition:
      raise ValueError("skip=true reads the projections of s1; it needs "
                       "condition=true.")

  def build_inputs(self, data_config, input_context=None):
    loader = cmlm_dataloader.CmlmDataLoader(data_config, self.tokenization,
                                            self.vocab)
    dataset = loader.load(input_context)
    if loader.corpus_stats is not None:
      # Shown on the console: how much of the corpus became sentence pairs
      # (single-sentence documents are skipped and counted, not an error).
      role = "training" if data_config.is_training else "validation"
      source = data_config.input_path or data_config.tfds_name
      print(f"CMLM {role} data ({source}, split {data_config.split!r}, "
            f"{data_config.pair_unit} pairs): {loader.corpus_stats}",
            flush=True)
    return dataset

  def text_sample(self, data_config, max_sentences):
    if not data_config.input_path:
      return []  # a TFDS source: not read before training
    sentences = unk_rate.sample_corpus(
        data_config.input_path, max_sentences, data_config.split,
        data_config.heldout_percent, data_config.skip_invalid_lines)
    if not sentences:
      # Said now, before the run writes anything: the input pipeline would
      # find it only at the first batch, once the run directory is written.
      split = data_config.split
      raise corpus.CorpusError(
          f"The corpus {data_config.input_path!r} contains no text"
          + (f" in its {split!r} split." if split != "all" else "."))
    return sentences

  def build_head(self, encoder):
    return model_builder.build_cmlm_head(
        encoder, skip=self.config.skip,
        mlm_activation=self.config.mlm_activation,
        mlm_initializer_range=self.config.mlm_initializer_range)

  def call(self, encoder, head, state, features, training=None):
    del state
    if not self.config.condition:
      return unconditioned_mlm_outputs(encoder, head, features,
                                       training=training)
    return conditional_mlm_outputs(encoder, head, features, training=training)

  def dummy_features(self, batch_size: int = 1):
    """A batch of this objective's features, to build the head's variables."""
    ids = tf.ones([batch_size, self.tokenization.seq_length], tf.int32)
    features = {}
    for prefix in ("s1_", "s2_"):
      features.update({f"{prefix}input_word_ids": ids,
                       f"{prefix}input_mask": ids,
                       f"{prefix}input_type_ids": tf.zeros_like(ids)})
    features["masked_lm_positions"] = tf.ones(
        [batch_size, self.config.train_data.max_predictions_per_seq],
        tf.int32)
    return features
