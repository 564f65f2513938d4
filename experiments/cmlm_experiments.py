"""The CMLM experiments, registered with Model Garden's `exp_factory`.

`experiments/registry_imports.py` imports this module (and
`cmlm/registry_imports.py`, which the commands import, imports that one).
Each experiment also exists as YAML in `experiments/configs/`, which
`--config_file` layers on top (the YAML files are the same values, written out
for people who prefer to read or copy them).

- `cmlm/tiny`: a 2-layer encoder that trains on the embedded corpus on a CPU.
- `cmlm/demo`: cmlm/tiny with max pooling (table 9), the demo's experiment.
- `cmlm/en_base`: the English recipe of section 3 — BERT-base, N=15, s1 and
  s2 consecutive sequences of whole sentences up to 256 tokens, 80 masked
  tokens in a full s2, global batch 2048, LAMB at 1e-3 (beta1 0.9,
  beta2 0.999), 10k warm-up steps then linear decay over 1M steps.
- `cmlm/en_workstation`: en_base's objective (N=15, s1 and s2 consecutive
  sequences, 80/256 of s2 masked) on a BERT small enough for a CPU
  workstation (4 layers x 256 hidden, 128 tokens, batch 32, 4k steps);
  its cost beside en_base's: docs/training.md#what-a-recipe-costs.
- `cmlm/multilingual`, `cmlm/multilingual_cmlm_br`, `cmlm/multilingual_br`:
  section 4's stages (CMLM; CMLM + 0.2 BR; BR alone), chained by
  `python -m cmlm stages --schedule=s1|s2|s3` (cmlm/stages.py).
- `cmlm/xnli`: cross-lingual NLI fine-tuning (section 4.3).

Every experiment is the one sentence-encoder task (`training/task.py`): an
encoder (`task.model`), its tokenization (`task.tokenization`) and named,
weighted objectives (`task.objectives.cmlm`, `.bitext_retrieval`, `.nli`).
"""
import os

from cmlm.data_pipelines import bitext_dataloader
from cmlm.data_pipelines import cmlm_dataloader
from cmlm.data_pipelines import nli_data
from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.modeling import model_builder
from cmlm.objectives.base import ObjectivesConfig
from cmlm.objectives.bitext_retrieval import BitextRetrievalObjectiveConfig
from cmlm.objectives.cmlm import CmlmObjectiveConfig
from cmlm.objectives.nli import NliObjectiveConfig
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import optimization
from official.nlp.configs import encoders
from cmlm.training.strategies import FROM_HARDWARE
from cmlm.training.task import SentenceEncoderTaskConfig

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMBEDDED_CORPUS = os.path.join(REPO_ROOT, "data", "corpus_en")
EMBEDDED_VOCAB = os.path.join(REPO_ROOT, "data", "vocab_en_uncased.txt")
# Where an experiment on public data the repository does not ship (the
# projects' multilingual corpora, bitext, NLI) reads it by default:
# `source_data/` of the working directory, laid out as its README says;
# an override of its `input_path` names any other place.
SOURCE_DATA = "source_data"


def vocab_size_of(vocab_file: str) -> int:
  """Number of tokens (lines) of a WordPiece vocabulary file; 0 when there
  is no such file. A config is built before the user's overrides apply
  (which may name another vocabulary, and the size), so it reads nothing
  that may be absent; training compares the vocabulary it is given with
  `task.model.encoder.vocab_size` and says in one line when they differ."""
  if not os.path.isfile(vocab_file):
    return 0
  with open(vocab_file, encoding="utf-8") as f:
    return sum(1 for _ in f)


def _optimization(optimizer: str, learning_rate: float, warmup_steps: int,
                  decay_steps: int, **optimizer_args):
  """Linear warm-up, then linear decay to zero (section 3)."""
  return optimization.OptimizationConfig({
      "optimizer": {"type": optimizer, optimizer: optimizer_args},
      "learning_rate": {
          "type": "polynomial",
          "polynomial": {"initial_learning_rate": learning_rate,
                         "decay_steps": decay_steps,
                         "end_learning_rate": 0.0,
                         "power": 1.0}},
      "warmup": {"type": "linear",
                 "linear": {"warmup_steps": warmup_steps}},
  })


_WEIGHT_DECAY_EXCLUDED = ["LayerNorm", "layer_norm", "bias"]


def _runtime_from_hardware() -> cfg.RuntimeConfig:
  """No strategy of the experiment's own: `python -m cmlm train` takes
  `--strategy`, else the hardware's (`training.strategies.choose`)."""
  return cfg.RuntimeConfig(distribution_strategy=FROM_HARDWARE)


@exp_factory.register_config_factory("cmlm/tiny")
def cmlm_tiny() -> cfg.ExperimentConfig:
  """A tiny CMLM on the embedded corpus: minutes on 2 CPU cores."""
  seq_length, num_projections = 48, 15
  data = lambda split, training: cmlm_dataloader.CmlmDataConfig(
      input_path=EMBEDDED_CORPUS, pair_unit="sequence",
      max_predictions_per_seq=16,
      masking_rate=80 / 256, global_batch_size=32, is_training=training,
      heldout_percent=5, split=split, seed=None if training else 1)
  train_steps = 2000
  return cfg.ExperimentConfig(
      task=SentenceEncoderTaskConfig(
          model=model_builder.SiameseEncoderConfig(
              encoder=encoders.BertEncoderConfig(
                  vocab_size=vocab_size_of(EMBEDDED_VOCAB), hidden_size=128,
                  num_layers=2, num_attention_heads=2, intermediate_size=256,
                  max_position_embeddings=seq_length + num_projections),
              num_projections=num_projections),
          tokenization=TokenizationConfig(
              vocab_file=EMBEDDED_VOCAB, lower_case=True,
              seq_length=seq_length),
          objectives=ObjectivesConfig({"cmlm": CmlmObjectiveConfig(
              train_data=data("train", True),
              validation_data=data("heldout", False))})),
      trainer=cfg.TrainerConfig(
          train_steps=train_steps, steps_per_loop=100,
          summary_interval=100, checkpoint_interval=500, max_to_keep=3,
          validation_interval=500, validation_steps=10,
          optimizer_config=_optimization(
              "adamw", 1e-3, warmup_steps=100, decay_steps=train_steps,
              weight_decay_rate=0.01,
              exclude_from_weight_decay=_WEIGHT_DECAY_EXCLUDED)),
      runtime=_runtime_from_hardware())


@exp_factory.register_config_factory("cmlm/demo")
def cmlm_demo() -> cfg.ExperimentConfig:
  """`python -m cmlm demo`'s experiment: cmlm/tiny with max pooling.

  Max pooling is table 9's alternative to mean pooling. At this size and
  training time (2000 steps, minutes on 2 CPU cores) mean-pooled vectors fall
  further below the untrained encoder's bag of random word vectors on STS-B
  dev than max-pooled ones (docs/cmlm_results.md, the demo's trials).
  """
  params = cmlm_tiny()
  params.task.model.pooling = "max"
  return params


@exp_factory.register_config_factory("cmlm/en_base")
def cmlm_en_base() -> cfg.ExperimentConfig:
  """The English CMLM-base recipe of section 3 (input_path and vocab_file to
  be given; the encoder's vocab_size is the vocabulary file's, 30522 for
  BERT's uncased vocabulary, the paper's)."""
  seq_length, num_projections = 256, 15
  # s1 and s2: consecutive sequences of whole sentences, 256 tokens at most.
  data = lambda training: cmlm_dataloader.CmlmDataConfig(
      pair_unit="sequence", max_predictions_per_seq=80, masking_rate=80 / 256,
      global_batch_size=2048, is_training=training)
  train_steps = 1_000_000
  return cfg.ExperimentConfig(
      task=SentenceEncoderTaskConfig(
          model=model_builder.SiameseEncoderConfig(
              encoder=encoders.BertEncoderConfig(
                  vocab_size=30522, hidden_size=768, num_layers=12,
                  num_attention_heads=12, intermediate_size=3072,
                  max_position_embeddings=512),
              num_projections=num_projections),
          tokenization=TokenizationConfig(lower_case=True,
                                          seq_length=seq_length),
          objectives=ObjectivesConfig({"cmlm": CmlmObjectiveConfig(
              train_data=data(True), validation_data=data(False))})),
      trainer=cfg.TrainerConfig(
          train_steps=train_steps, steps_per_loop=1000,
          summary_interval=1000, checkpoint_interval=10000, max_to_keep=5,
          validation_interval=10000, validation_steps=100,
          optimizer_config=_optimization(
              "lamb", 1e-3, warmup_steps=10_000, decay_steps=train_steps,
              beta_1=0.9, beta_2=0.999, weight_decay_rate=0.01,
              exclude_from_weight_decay=_WEIGHT_DECAY_EXCLUDED)),
      runtime=_runtime_from_hardware())


@exp_factory.register_config_factory("cmlm/en_workstation")
def cmlm_en_workstation() -> cfg.ExperimentConfig:
  """en_base's English CMLM, scaled to a CPU workstation (input_path and
  vocab_file to be given, as for en_base).

  The objective is section 3's (N=15 projections, s1 and s2 consecutive
  sequences of whole sentences, 80/256 of a full s2 masked); the encoder
  is a small BERT (4 layers, hidden 256, 4 heads: BERT-mini's shape, about
  1/27 of BERT-base's non-embedding weights), sequences of 128 tokens, a
  global batch of 32 and 4,000 steps (128k pairs, against en_base's
  2.048B), with AdamW at 5e-4: sized to end in an hour or two on 4 to 8
  CPU cores, which `benchmarks/recipe_cost.py` measures, beside en_base.
  """
  seq_length, num_projections = 128, 15
  data = lambda training: cmlm_dataloader.CmlmDataConfig(
      pair_unit="sequence", max_predictions_per_seq=40, masking_rate=80 / 256,
      global_batch_size=32, is_training=training)
  train_steps = 4_000
  params = cmlm_en_base()
  params.task.model.encoder = encoders.BertEncoderConfig(
      vocab_size=30522, hidden_size=256, num_layers=4, num_attention_heads=4,
      intermediate_size=1024, max_position_embeddings=seq_length
      + num_projections)
  params.task.tokenization.seq_length = seq_length
  params.task.objectives = ObjectivesConfig({"cmlm": CmlmObjectiveConfig(
      train_data=data(True), validation_data=data(False))})
  params.trainer = cfg.TrainerConfig(
      train_steps=train_steps, steps_per_loop=100, summary_interval=100,
      checkpoint_interval=500, max_to_keep=3, validation_interval=500,
      validation_steps=20,
      optimizer_config=_optimization(
          "adamw", 5e-4, warmup_steps=400, decay_steps=train_steps,
          weight_decay_rate=0.01,
          exclude_from_weight_decay=_WEIGHT_DECAY_EXCLUDED))
  return params


def _multilingual(cmlm_weight: float, bitext_weight: float,
                  train_steps: int) -> cfg.ExperimentConfig:
  """Section 4.4: BERT-base, cased multilingual vocabulary, N=15, B=2048.

  The objectives are CMLM (weight `cmlm_weight`) and bitext retrieval
  (`bitext_weight`, alpha of section 4.2); a weight of 0 leaves one out.
  """
  params = cmlm_en_base()
  params.task.tokenization.lower_case = False
  cmlm = params.task.objectives.cmlm
  cmlm.weight = cmlm_weight
  params.task.objectives = ObjectivesConfig({
      "cmlm": cmlm,
      "bitext_retrieval": BitextRetrievalObjectiveConfig(
          weight=bitext_weight, margin=0.3,
          train_data=bitext_dataloader.BitextDataConfig(
              global_batch_size=2048, is_training=True))})
  # The paper's multilingual vocabulary has 501,153 tokens.
  params.task.model.encoder.vocab_size = 501_153
  params.trainer.train_steps = train_steps
  params.trainer.optimizer_config.learning_rate.polynomial.decay_steps = (
      train_steps)
  return params


@exp_factory.register_config_factory("cmlm/multilingual")
def cmlm_multilingual() -> cfg.ExperimentConfig:
  """Multilingual CMLM alone (2M steps); stage 1 of S2 and S3 (1.5M)."""
  return _multilingual(1.0, 0.0, 2_000_000)


@exp_factory.register_config_factory("cmlm/multilingual_cmlm_br")
def cmlm_multilingual_cmlm_br() -> cfg.ExperimentConfig:
  """CMLM + alpha BR (alpha=0.2): S1 from the start, or stage 2 of S3."""
  return _multilingual(1.0, 0.2, 1_000_000)


@exp_factory.register_config_factory("cmlm/multilingual_br")
def cmlm_multilingual_br() -> cfg.ExperimentConfig:
  """Bitext retrieval alone: stage 2 of S2."""
  return _multilingual(0.0, 1.0, 1_000_000)


@exp_factory.register_config_factory("cmlm/xnli")
def cmlm_xnli() -> cfg.ExperimentConfig:
  """Cross-lingual NLI fine-tuning (4.3) of a multilingual CMLM encoder.

  Give `task.init_checkpoint` (a CMLM model_dir: its model and tokenization
  are taken over) and the data:
  `task.objectives.nli.train_data.input_path=en=mnli_en.tsv,de=mnli_de.tsv`.
  """
  base = _multilingual(1.0, 0.0, 1)
  data = lambda training: nli_data.NliDataConfig(global_batch_size=128,
                                                 is_training=training)
  tokenization = base.task.tokenization
  tokenization.seq_length = 128
  model = base.task.model
  # NLI reads the sentence embedding only: no projection head is trained
  # (a source that embeds with "proj" keeps its own; see
  # `training.run_config.adopt_init_checkpoint_encoder`).
  model.num_projections = 0
  return cfg.ExperimentConfig(
      task=SentenceEncoderTaskConfig(
          model=model, tokenization=tokenization,
          objectives=ObjectivesConfig({"nli": NliObjectiveConfig(
              train_data=data(True), validation_data=data(False))})),
      trainer=cfg.TrainerConfig(
          train_steps=30_000, steps_per_loop=500, checkpoint_interval=5000,
          validation_interval=5000, validation_steps=50,
          optimizer_config=_optimization(
              "adamw", 2e-5, warmup_steps=3000, decay_steps=30_000,
              weight_decay_rate=0.01,
              exclude_from_weight_decay=_WEIGHT_DECAY_EXCLUDED)),
      runtime=_runtime_from_hardware())
