"""Contextual lensing experiments (Kiros et al. 2020,
"Contextual Lensing of Universal Sentence Representations", arXiv:2002.10018).

A lens (`task.model.pooling_head`: mean, simple or gated_conv) learns, over a frozen
core (`task.model.trainable_core=false`), to reduce the core's token states
to a sentence vector, trained by a Classifier (the `nli` objective with a
hidden layer, named `classifier`) or a Ranker (`ranker`, VSE++). The core
is `task.init_checkpoint`: any run or import of the garden (its `task.model`
but the lens, and its vocabulary, are taken over; see
`training.run_config.adopt_init_checkpoint_encoder`), whose variables stay
bit-identical.

- `lensing/tiny`: a Simple lens (D=256) with the Classifier on a partial
  SNLI under `source_data/nli/snli_partial/` of the working directory
  (README.md, "Data"; dev to train, test to validate); cmlm/tiny's encoder
  (start from a `cmlm/tiny` run). Minutes on 2 CPU cores.
- `lensing/tiny_ranker`: a Simple lens with the Ranker on Multi30k en|de
  (`source_data/bitext/multi30k/`).
- `lensing/nli`: section 4.1's NLI lens, sCL(BERT; NLI)-like: GatedConv
  (D=1024, gating 256, M=1, width 3), embedding dropout 0.1, Classifier
  hidden 512, batch 128, Adam 1e-3 with 2k warm-up (inside table 3's search
  space); give `task.objectives.classifier.train_data.input_path` (SNLI +
  MultiNLI as TSV or jsonl) and `task.init_checkpoint`.
- `lensing/translate`: section 4.1's translation lens, sCL(mBERT; N)-like:
  Simple (D=1024) with the Ranker (margin 0.2), batch 128; give the bitext
  (`task.objectives.ranker.train_data.input_path`) and the core.
"""
import os

from cmlm.data_pipelines import bitext_dataloader
from cmlm.data_pipelines import nli_data
from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.experiments import cmlm_experiments
from cmlm.projects.contextual_lensing.lenses import LensConfig
from cmlm.objectives.base import ObjectivesConfig
from cmlm.objectives.nli import NliObjectiveConfig
from cmlm.projects.contextual_lensing.ranker_objective import RankerObjectiveConfig
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import optimization
from cmlm.training.strategies import FROM_HARDWARE
from cmlm.training.task import SentenceEncoderTaskConfig

SNLI_PARTIAL = os.path.join(cmlm_experiments.SOURCE_DATA, "nli",
                            "snli_partial")
MULTI30K = os.path.join(cmlm_experiments.SOURCE_DATA, "bitext", "multi30k")


def _optimization(learning_rate: float, warmup_steps: int, train_steps: int):
  """Adam with a linear warm-up (section 4.1), then linear decay."""
  return optimization.OptimizationConfig({
      "optimizer": {"type": "adam"},
      "learning_rate": {"type": "polynomial", "polynomial": {
          "initial_learning_rate": learning_rate,
          "decay_steps": train_steps, "end_learning_rate": 0.0,
          "power": 1.0}},
      "warmup": {"type": "linear",
                 "linear": {"warmup_steps": warmup_steps}}})


def _experiment(name, objective, model, tokenization, train_steps,
                learning_rate, warmup_steps, steps_per_loop):
  model.trainable_core = False
  model.num_projections = 0  # no CMLM here: no projection head
  return cfg.ExperimentConfig(
      task=SentenceEncoderTaskConfig(
          model=model, tokenization=tokenization,
          objectives=ObjectivesConfig({name: objective})),
      trainer=cfg.TrainerConfig(
          train_steps=train_steps, steps_per_loop=steps_per_loop,
          summary_interval=steps_per_loop,
          # A quarter of the run in whole loops: orbit saves only at the
          # end of a loop (prepared_run.check_trainer).
          checkpoint_interval=steps_per_loop * max(
              1, -(-train_steps // (4 * steps_per_loop))),
          max_to_keep=2, validation_interval=train_steps,
          validation_steps=10,
          optimizer_config=_optimization(learning_rate, warmup_steps,
                                         train_steps)),
      # No strategy of its own: the command's --strategy, else the hardware's.
      runtime=cfg.RuntimeConfig(distribution_strategy=FROM_HARDWARE))


def _classifier(train_path, validation_path, batch_size, hidden_size):
  data = lambda path, training: nli_data.NliDataConfig(
      input_path=path, global_batch_size=batch_size, is_training=training)
  return NliObjectiveConfig(train_data=data(train_path, True),
                            validation_data=data(validation_path, False),
                            hidden_size=hidden_size)


def _ranker(train_path, validation_path, batch_size, margin=0.2):
  data = lambda path, training: bitext_dataloader.BitextDataConfig(
      input_path=path, global_batch_size=batch_size, is_training=training)
  return RankerObjectiveConfig(train_data=data(train_path, True),
                               validation_data=data(validation_path, False),
                               margin=margin)


def _multi30k(split, language):
  return os.path.join(MULTI30K, f"{split}.{language}.gz")


def _tiny_model(lens: LensConfig):
  model = cmlm_experiments.cmlm_tiny().task.model
  model.pooling_head = lens
  return model


def _tiny_tokenization():
  return TokenizationConfig(vocab_file=cmlm_experiments.EMBEDDED_VOCAB,
                            lower_case=True, seq_length=32)


@exp_factory.register_config_factory("lensing/tiny")
def lensing_tiny() -> cfg.ExperimentConfig:
  objective = _classifier(
      os.path.join(SNLI_PARTIAL, "snli_1.0_dev.jsonl"),
      os.path.join(SNLI_PARTIAL, "snli_1.0_test.jsonl"), 32, hidden_size=64)
  return _experiment("classifier", objective,
                     _tiny_model(LensConfig(type="simple", output_size=256)),
                     _tiny_tokenization(), train_steps=300,
                     learning_rate=1e-3, warmup_steps=30, steps_per_loop=50)


@exp_factory.register_config_factory("lensing/tiny_ranker")
def lensing_tiny_ranker() -> cfg.ExperimentConfig:
  objective = _ranker(
      f"{_multi30k('train', 'en')}|{_multi30k('train', 'de')}",
      f"{_multi30k('val', 'en')}|{_multi30k('val', 'de')}", 32)
  return _experiment("ranker", objective,
                     _tiny_model(LensConfig(type="simple", output_size=256)),
                     _tiny_tokenization(), train_steps=300,
                     learning_rate=1e-3, warmup_steps=30, steps_per_loop=50)


def _base_model(lens: LensConfig):
  model = cmlm_experiments.cmlm_en_base().task.model
  model.pooling_head = lens
  return model


@exp_factory.register_config_factory("lensing/nli")
def lensing_nli() -> cfg.ExperimentConfig:
  objective = _classifier("", "", 128, hidden_size=512)
  lens = LensConfig(type="gated_conv", output_size=1024, gating_size=256,
                    num_conv_layers=1, kernel_widths=[3], dropout_rate=0.1)
  return _experiment("classifier", objective, _base_model(lens),
                     TokenizationConfig(lower_case=True, seq_length=128),
                     train_steps=20_000, learning_rate=1e-3,
                     warmup_steps=2000, steps_per_loop=500)


@exp_factory.register_config_factory("lensing/translate")
def lensing_translate() -> cfg.ExperimentConfig:
  objective = _ranker("", "", 128, margin=0.2)
  lens = LensConfig(type="simple", output_size=1024, dropout_rate=0.1)
  return _experiment("ranker", objective, _base_model(lens),
                     TokenizationConfig(lower_case=False, seq_length=128),
                     train_steps=50_000, learning_rate=1e-3,
                     warmup_steps=4000, steps_per_loop=500)
