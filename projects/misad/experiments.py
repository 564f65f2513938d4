"""The MiSAD experiments (Li et al. 2020, section 4), registered with Model
Garden's `exp_factory`; the project's `registry_imports.py` imports this
module.

Both start, as the paper does, from a trained encoder: give
`task.init_checkpoint` (an imported model, `python -m cmlm import`, or any
run of ours; its encoder and vocabulary are taken over) and the marked
sentences `python -m cmlm ngrams` writes:

    python -m cmlm ngrams --input=data/corpus_en --output=runs/ngrams_en.txt
    python -m cmlm train --experiment=misad/tiny --model_dir=runs/misad \\
        --params_override="task.init_checkpoint=runs/minilm,\\
    task.objectives.misad.train_data.input_path=runs/ngrams_en.txt"

- `misad/tiny`: a few hundred CPU steps at batch 16, sequence length 64.
- `misad/bert_base`: the paper's recipe (section 4): BERT-base, sequences of
  128 tokens, batch 64, Adam at 5e-5 with linear warm-up over the first 10%
  of the steps, dropout 0.1, one epoch over 10M sentences (156,250 steps).

The objective (`misad_objective.py`) is MSE(E^w + E^R, E^S) on unit vectors
plus MLM on S at equal weights, w chosen by the lowest MLM score;
`task.objectives.misad.misad_weight=0` is MLM alone on the same sentences
(the baseline of `projects/misad/evidence.py`).
"""
from cmlm.projects.misad import misad_data
from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.experiments.cmlm_experiments import EMBEDDED_VOCAB
from cmlm.experiments.cmlm_experiments import _WEIGHT_DECAY_EXCLUDED
from cmlm.experiments.cmlm_experiments import _optimization
from cmlm.experiments.cmlm_experiments import vocab_size_of
from cmlm.modeling import model_builder
from cmlm.objectives.base import ObjectivesConfig
from cmlm.projects.misad.misad_objective import MisadObjectiveConfig
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.nlp.configs import encoders
from cmlm.training.strategies import FROM_HARDWARE
from cmlm.training.task import SentenceEncoderTaskConfig


def _misad(encoder, seq_length: int, batch_size: int, learning_rate: float,
           train_steps: int, steps_per_loop: int, vocab_file: str = ""
           ) -> cfg.ExperimentConfig:
  data = lambda training: misad_data.MisadDataConfig(
      global_batch_size=batch_size, is_training=training)
  return cfg.ExperimentConfig(
      task=SentenceEncoderTaskConfig(
          model=model_builder.SiameseEncoderConfig(
              encoder=encoder, num_projections=0),  # no CMLM: no projection head
          tokenization=TokenizationConfig(vocab_file=vocab_file,
                                          lower_case=True,
                                          seq_length=seq_length),
          objectives=ObjectivesConfig({"misad": MisadObjectiveConfig(
              train_data=data(True), validation_data=data(False))})),
      trainer=cfg.TrainerConfig(
          train_steps=train_steps, steps_per_loop=steps_per_loop,
          summary_interval=steps_per_loop,
          # A quarter of the run in whole loops: orbit saves only at the
          # end of a loop (prepared_run.check_trainer).
          checkpoint_interval=steps_per_loop * max(
              1, -(-train_steps // (4 * steps_per_loop))),
          max_to_keep=3, validation_interval=train_steps,
          validation_steps=10,
          optimizer_config=_optimization(
              "adamw", learning_rate,
              warmup_steps=max(1, train_steps // 10),
              decay_steps=train_steps, weight_decay_rate=0.01,
              exclude_from_weight_decay=_WEIGHT_DECAY_EXCLUDED)),
      # No strategy of its own: the command's --strategy, else the hardware's.
      runtime=cfg.RuntimeConfig(distribution_strategy=FROM_HARDWARE))


@exp_factory.register_config_factory("misad/tiny")
def misad_tiny() -> cfg.ExperimentConfig:
  """MiSAD + MLM for a few hundred CPU steps.

  `task.init_checkpoint`'s encoder and vocabulary replace the tiny encoder
  below; to train that from scratch instead, also give
  `task.tokenization.vocab_file=data/vocab_en_uncased.txt`.
  """
  seq_length = 64
  return _misad(
      encoders.BertEncoderConfig(
          vocab_size=vocab_size_of(EMBEDDED_VOCAB), hidden_size=128,
          num_layers=2, num_attention_heads=2, intermediate_size=256,
          max_position_embeddings=seq_length + 15),
      seq_length=seq_length, batch_size=16, learning_rate=5e-5,
      train_steps=300, steps_per_loop=50)


@exp_factory.register_config_factory("misad/bert_base")
def misad_bert_base() -> cfg.ExperimentConfig:
  """Section 4: BERT-base, length 128, batch 64, lr 5e-5, 10% warm-up."""
  params = _misad(
      encoders.BertEncoderConfig(
          vocab_size=30522, hidden_size=768, num_layers=12,
          num_attention_heads=12, intermediate_size=3072,
          max_position_embeddings=512, dropout_rate=0.1,
          attention_dropout_rate=0.1),
      seq_length=128, batch_size=64, learning_rate=5e-5,
      train_steps=156_250, steps_per_loop=500)
  return params
