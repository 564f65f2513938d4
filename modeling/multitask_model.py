"""CMLM and bitext retrieval on one encoder (paper section 4.2).

One model serves the stages S1-S3: whichever features a batch carries are
used. CMLM features (`s1_*`, `s2_*`, `masked_lm_positions`) go through the
conditional MLM; translation pairs (`source_*`, `target_*`) are embedded by
the same `SentenceEncoder`, "the same way as in CMLM", for the additive
margin loss. The task weighs the two losses.
"""
import tf_keras

from modeling.conditional_mlm import ConditionalMaskedLM

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


class CmlmBitextModel(tf_keras.Model):
  """Outputs `mlm_logits` (CMLM batches) and `source_embedding`,
  `target_embedding` `[batch, hidden]` (bitext batches)."""

  def __init__(self, cmlm: ConditionalMaskedLM, **kwargs):
    super().__init__(**kwargs)
    self.cmlm = cmlm
    self.encoder = cmlm.encoder

  def call(self, features, training=None):
    outputs = {}
    if "s2_input_word_ids" in features:
      outputs.update(self.cmlm(features, training=training))
    if "source_input_word_ids" in features:
      for side in ("source", "target"):
        inputs = {key: features[f"{side}_{key}"] for key in ENCODER_KEYS}
        outputs[f"{side}_embedding"] = self.encoder(
            inputs, training=training)["pooled_output"]
    return outputs

  @property
  def checkpoint_items(self):
    """The same items as CMLM's, so stages restore each other's weights."""
    return self.cmlm.checkpoint_items
