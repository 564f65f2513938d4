"""Tiny configs and batches shared by the tests (hidden 16, one layer)."""
import numpy as np
import tensorflow as tf

from modeling import model_builder
from official.nlp.configs import encoders

VOCAB_SIZE = 40
SPECIAL_IDS = (0, 1, 2, 3, 4)  # [PAD] [UNK] [CLS] [SEP] [MASK]


def tiny_model_config(num_projections=3, **kwargs):
  return model_builder.CmlmModelConfig(
      encoder=encoders.BertEncoderConfig(
          vocab_size=VOCAB_SIZE, hidden_size=16, num_layers=1,
          num_attention_heads=2, intermediate_size=32,
          max_position_embeddings=32, dropout_rate=0.0,
          attention_dropout_rate=0.0),
      num_projections=num_projections, **kwargs)


def tiny_run_overrides(train_steps: int) -> dict:
  """`params.override()` of cmlm/tiny for short real runs: a 1-layer,
  16-wide encoder, batches of 4 x 16 tokens, a checkpoint every 2 steps."""
  return {
      "task": {"model": {"encoder": {"hidden_size": 16, "num_layers": 1,
                                     "num_attention_heads": 2,
                                     "intermediate_size": 32}},
               "train_data": {"global_batch_size": 4, "seq_length": 16,
                              "max_predictions_per_seq": 5}},
      "trainer": {"train_steps": train_steps, "steps_per_loop": 2,
                  "checkpoint_interval": 2, "summary_interval": 2}}


def fake_batch(batch_size=4, seq_length=10, num_predictions=3, seed=0,
               s1_token_range=(5, VOCAB_SIZE), s2_token_range=(5, VOCAB_SIZE)):
  """A CMLM feature batch: [CLS] tokens [SEP] then padding, s2 masked."""
  rng = np.random.default_rng(seed)
  def sentence(low_high):
    ids = np.zeros([batch_size, seq_length], np.int32)
    mask = np.zeros_like(ids)
    for row in range(batch_size):
      length = rng.integers(num_predictions + 3, seq_length + 1)
      ids[row, 0], ids[row, length - 1] = 2, 3
      ids[row, 1:length - 1] = rng.integers(*low_high, size=length - 2)
      mask[row, :length] = 1
    return ids, mask
  s1_ids, s1_mask = sentence(s1_token_range)
  s2_ids, s2_mask = sentence(s2_token_range)
  positions = np.tile(np.arange(1, num_predictions + 1), [batch_size, 1])
  original = np.take_along_axis(s2_ids, positions, axis=1)
  masked = s2_ids.copy()
  np.put_along_axis(masked, positions, 4, axis=1)
  weights = np.ones([batch_size, num_predictions], np.float32)
  weights[0, -1] = 0.0  # one unused prediction slot
  features = dict(
      s1_input_word_ids=s1_ids, s1_input_mask=s1_mask,
      s1_input_type_ids=np.zeros_like(s1_ids),
      s2_input_word_ids=masked, s2_input_mask=s2_mask,
      s2_input_type_ids=np.zeros_like(s2_ids),
      masked_lm_positions=positions.astype(np.int32),
      masked_lm_ids=original.astype(np.int32), masked_lm_weights=weights)
  return {k: tf.constant(v) for k, v in features.items()}


def encoder_inputs(features, prefix="s1_"):
  return {key: features[prefix + key]
          for key in ("input_word_ids", "input_mask", "input_type_ids")}


def tiny_task_config(**model_kwargs):
  """A CMLM task config on the tiny model, for batches from `fake_batch`."""
  from cmlm import cmlm_task  # pylint: disable=g-import-not-at-top
  from data_pipelines import cmlm_dataloader  # pylint: disable=g-import-not-at-top
  return cmlm_task.CmlmTaskConfig(
      model=tiny_model_config(**model_kwargs),
      train_data=cmlm_dataloader.CmlmDataConfig(seq_length=10))
