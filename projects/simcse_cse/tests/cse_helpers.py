"""Tiny SimCSE / CMLM-CSE tasks and batches shared by their tests."""
import tensorflow as tf

from cmlm.data_pipelines import masking
from cmlm.projects.simcse_cse import cmlm_cse_objective as cmlm_cse
from cmlm.projects.simcse_cse import simcse_objective as simcse
from tests import helpers
from cmlm.training import task as task_lib


def batch(batch_size=4, seed=0):
  """Sentence features (the fake batch's s1) with x' masked at 15%+."""
  features = helpers.fake_batch(batch_size, seed=seed)
  out = {key: features["s1_" + key]
         for key in ("input_word_ids", "input_mask", "input_type_ids")}
  (out["masked_input_word_ids"], out["masked_lm_positions"],
   out["masked_lm_ids"], out["masked_lm_weights"]) = masking.mask_tokens(
       out["input_word_ids"], out["input_mask"], max_predictions_per_seq=3,
       masking_rate=0.3, mask_token_id=4, vocab_size=helpers.VOCAB_SIZE,
       special_token_ids=helpers.SPECIAL_IDS, seed=tf.constant([1, 2]))
  return out


def task(kind="simcse", dropout=0.0, num_layers=1, **objective_kwargs):
  config_cls = (simcse.SimcseObjectiveConfig if kind == "simcse"
                else cmlm_cse.CmlmCseObjectiveConfig)
  config = helpers.tiny_task_config(
      objectives={kind: config_cls(**objective_kwargs)})
  config.model.encoder.dropout_rate = dropout
  config.model.encoder.attention_dropout_rate = dropout
  config.model.encoder.num_layers = num_layers
  config.model.num_projections = 0  # as the experiments: no CMLM projection
  return task_lib.SentenceEncoderTask(config)


def model_of(a_task, features):
  model = a_task.build_model()
  model({name: features for name in a_task.objectives}, training=False)
  return model


def loss_and_gradients(a_task, model, features, variables=None):
  inputs = {name: features for name in a_task.objectives}
  with tf.GradientTape() as tape:
    loss = a_task.build_losses(inputs, model(inputs, training=True))
  variables = variables or model.encoder.trainable_variables
  return float(loss), tape.gradient(loss, variables)
