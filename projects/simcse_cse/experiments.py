"""SimCSE and CMLM-CSE experiments (Zhang and Chen 2023, "CMLM-CSE: Based
on Conditional MLM Contrastive Learning for Sentence Embeddings",
doi:10.5121/csit.2023.130805).

Both start from an existing encoder (`task.init_checkpoint`: an imported
BERT, a CMLM run of the garden), as the paper starts from BERT; a run of ours
there gives its `task.model` and vocabulary (`training.run_config`'s
`adopt_init_checkpoint_encoder`; dropout rates stay these experiments').

- `simcse/tiny`, `cmlm_cse/tiny`: cmlm/tiny's encoder (start from a
  `cmlm/tiny` run) on the embedded corpus's sentences, a few minutes on CPU;
  SimCSE's training-only MLP on, the start's pooling.
- `simcse/bert_base`, `cmlm_cse/bert_base`: section 4.1's recipe (that of
  unsupervised SimCSE): batch 64, Adam(W) at 3e-5 with linear decay, max
  length 32, tau 0.05, one epoch (15,625 steps = wiki1m's 1M sentences / 64;
  set `trainer.train_steps` for another corpus), the [CLS] state as the
  sentence vector with SimCSE's MLP over it in training only (SimCSE's
  unsupervised "cls" recipe: `--pooler_type cls --mlp_only_train`; the
  evaluated and exported vector is [CLS] without the MLP; the pooling is
  kept over the start's,
  `training.run_config.adopt_init_checkpoint_encoder`);
  CMLM-CSE adds lambda 0.005, 15% masking, an 8-layer extractor and a
  3-block fusioner. Give `task.init_checkpoint` and
  `task.objectives.<name>.train_data.input_path`.
  Model selection as the paper's: STS-B dev Spearman every 125 steps, the
  best checkpoint kept in `<model_dir>/best` (`trainer.best_checkpoint_*`,
  training/best_checkpoint.py; `python -m cmlm train` scores it).
"""
from cmlm.projects.simcse_cse.sentence_dataloader import SentenceDataConfig
from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.experiments import cmlm_experiments
from cmlm.objectives.base import ObjectivesConfig
from cmlm.projects.simcse_cse.cmlm_cse_objective import CmlmCseObjectiveConfig
from cmlm.projects.simcse_cse.simcse_objective import SimcseObjectiveConfig
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import optimization
from official.nlp.configs import encoders
from cmlm.training.strategies import FROM_HARDWARE
from cmlm.training.task import SentenceEncoderTaskConfig

BERT_BASE_EPOCH_STEPS = 1_000_000 // 64  # wiki1m, batch 64


def _optimization(learning_rate: float, train_steps: int):
  """SimCSE's: AdamW without warm-up, linear decay to 0 (HF Trainer's)."""
  return optimization.OptimizationConfig({
      "optimizer": {"type": "adamw", "adamw": {
          "weight_decay_rate": 0.0,
          "exclude_from_weight_decay": ["LayerNorm", "layer_norm", "bias"]}},
      "learning_rate": {"type": "polynomial", "polynomial": {
          "initial_learning_rate": learning_rate,
          "decay_steps": train_steps, "end_learning_rate": 0.0,
          "power": 1.0}}})


SELECTION_INTERVAL = 125  # section 4.1: STS-B dev every 125 steps


def _experiment(objective, model, tokenization, train_steps, learning_rate,
                steps_per_loop, select_on_sts_b=False):
  selection = dict(
      validation_interval=SELECTION_INTERVAL,
      best_checkpoint_export_subdir="best",
      best_checkpoint_eval_metric="sts-b",
      best_checkpoint_metric_comp="higher") if select_on_sts_b else dict(
          validation_interval=train_steps)
  model.num_projections = 0  # no CMLM projection head in SimCSE or CMLM-CSE
  return cfg.ExperimentConfig(
      task=SentenceEncoderTaskConfig(
          model=model, tokenization=tokenization,
          objectives=ObjectivesConfig({objective.type: objective})),
      trainer=cfg.TrainerConfig(
          train_steps=train_steps, steps_per_loop=steps_per_loop,
          summary_interval=steps_per_loop,
          checkpoint_interval=max(train_steps, steps_per_loop),
          max_to_keep=2, validation_steps=1,
          optimizer_config=_optimization(learning_rate, train_steps),
          **selection),
      # No strategy of its own: the command's --strategy, else the hardware's.
      runtime=cfg.RuntimeConfig(distribution_strategy=FROM_HARDWARE))


def _data(input_path, batch_size, text_format, training=True):
  return SentenceDataConfig(input_path=input_path, format=text_format,
                            global_batch_size=batch_size,
                            is_training=training, masking_rate=0.15)


def _tiny(objective_cls) -> cfg.ExperimentConfig:
  """cmlm/tiny's encoder on the embedded corpus's sentences."""
  base = cmlm_experiments.cmlm_tiny()
  objective = objective_cls(train_data=_data(
      cmlm_experiments.EMBEDDED_CORPUS, 32, "corpus"), train_only_mlp=True)
  tokenization = TokenizationConfig(
      vocab_file=cmlm_experiments.EMBEDDED_VOCAB, lower_case=True,
      seq_length=32)
  return _experiment(objective, base.task.model, tokenization,
                     train_steps=500, learning_rate=1e-4, steps_per_loop=50)


def _bert_base(objective_cls) -> cfg.ExperimentConfig:
  """Section 4.1: BERT-base, batch 64, lr 3e-5, length 32, one epoch."""
  model = cmlm_experiments.cmlm_en_base().task.model
  model.encoder = encoders.BertEncoderConfig(
      vocab_size=30522, hidden_size=768, num_layers=12,
      num_attention_heads=12, intermediate_size=3072,
      max_position_embeddings=512, dropout_rate=0.1,
      attention_dropout_rate=0.1)
  model.pooling = "cls"  # SimCSE's unsupervised recipe: [CLS], ...
  objective = objective_cls(train_data=_data("", 64, "lines"),
                            train_only_mlp=True)  # ... MLP in training only
  return _experiment(objective, model,
                     TokenizationConfig(lower_case=True, seq_length=32),
                     train_steps=BERT_BASE_EPOCH_STEPS, learning_rate=3e-5,
                     steps_per_loop=SELECTION_INTERVAL,
                     select_on_sts_b=True)


@exp_factory.register_config_factory("simcse/tiny")
def simcse_tiny() -> cfg.ExperimentConfig:
  return _tiny(SimcseObjectiveConfig)


@exp_factory.register_config_factory("cmlm_cse/tiny")
def cmlm_cse_tiny() -> cfg.ExperimentConfig:
  return _tiny(CmlmCseObjectiveConfig)


@exp_factory.register_config_factory("simcse/bert_base")
def simcse_bert_base() -> cfg.ExperimentConfig:
  return _bert_base(SimcseObjectiveConfig)


@exp_factory.register_config_factory("cmlm_cse/bert_base")
def cmlm_cse_bert_base() -> cfg.ExperimentConfig:
  return _bert_base(CmlmCseObjectiveConfig)
