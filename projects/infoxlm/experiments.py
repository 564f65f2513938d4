"""InfoXLM experiments (Chi et al. 2021): MMLM + TLM + XLCo, eq. 7.

- `infoxlm/tiny`: cmlm/tiny's 2-layer encoder on CPU with public data under
  `source_data/` of the working directory (README.md, "Data"): monolingual
  UDHR text (+ English Genesis) for MMLM, Multi30k en-de/fr/cs and gettext
  en-xx translation pairs for TLM and XLCo. Give it
  a cased multilingual vocabulary (`python -m cmlm vocab ...`, or the one
  projects/infoxlm/evidence.py builds) with `task.tokenization.vocab_file`
  (the encoder takes its size).
  XLCo contrasts layer 1 of 2 (the only intermediate one), m = 0.99 (a
  100-step time constant for a run of hundreds of steps; 0.999 would leave
  the key encoder near its start for the whole run), a queue of 4096 keys
  (64 steps of 2 x 32 keys; the paper's 131072 holds 64 steps of its 2048
  examples' keys), filled `partial`ly so that no step of a short run goes
  without contrast.
- `infoxlm/base`: Appendix B, table 10: 12 layers, hidden 768, batch 2048,
  Adam (0.9, 0.98, eps 1e-6), learning rate 2e-4, 10k warm-up steps then
  linear decay over 150k steps, gradients clipped to global norm 1.0; XLCo on layer 8 with m = 0.999 and a queue of
  131072 (section 4.1); MMLM languages sampled with exponent 0.7 (3.4). The
  paper starts from XLM-R and its 250,002-piece SentencePiece vocabulary
  (the vocab_size set here); `python -m cmlm import` reads BERT-style
  (WordPiece) models only, so here a run starts from an imported BERT-style
  encoder such as mBERT (`task.init_checkpoint`, with that import's
  vocab_file and vocab_size); data paths are given with --params_override,
  mixup's other parallel corpus as
  `task.objectives.xlco.train_data.mixup_partner_path` (section 3.3).
  Not run here (no such hardware); a config only.

Every stage may start from an imported or trained encoder
(`task.init_checkpoint`); the XLCo key encoder then starts equal to it.
"""
import os

from cmlm.projects.infoxlm.infoxlm_data import InfoXlmDataConfig
from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.experiments import cmlm_experiments
from cmlm.modeling import model_builder
from cmlm.objectives.base import ObjectivesConfig
from cmlm.projects.infoxlm.masked_lm_objective import MaskedLmObjectiveConfig
from cmlm.projects.infoxlm.masked_lm_objective import TlmObjectiveConfig
from cmlm.projects.infoxlm.xlco_objective import XlcoObjectiveConfig
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.nlp.configs import encoders
from cmlm.training.task import SentenceEncoderTaskConfig

SOURCE_DATA = cmlm_experiments.SOURCE_DATA
# UDHR file names of the tiny experiment's monolingual languages.
UDHR_LANGUAGES = {"en": "eng", "de": "deu", "fr": "fra", "cs": "ces",
                  "es": "spa", "ru": "rus", "zh": "cmn_hans", "ja": "jpn",
                  "ar": "arb", "it": "ita"}
GETTEXT_LANGUAGES = ("de", "fr", "es", "ru", "zh_CN", "ja", "ar", "it")


def tiny_monolingual_path(shared: str = SOURCE_DATA) -> str:
  """"lang=file,..." of UDHR (every language) and Genesis (English; the
  other Genesis files are Latin-1, not UTF-8)."""
  corpora = os.path.join(shared, "corpora", "multilingual")
  parts = [f"{code}={corpora}/udhr2/{name}.txt"
           for code, name in UDHR_LANGUAGES.items()]
  parts.append(f"en={corpora}/genesis/english-kjv.txt")
  return ",".join(parts)


def tiny_bitext_path(shared: str = SOURCE_DATA) -> str:
  """Multi30k en-de/fr/cs and gettext en-xx, one corpus each."""
  multi30k = os.path.join(shared, "bitext", "multi30k")
  gettext = os.path.join(shared, "bitext", "gettext_glib_gtk")
  parts = [f"{multi30k}/train.en.gz|{multi30k}/train.{code}.gz"
           for code in ("de", "fr", "cs")]
  parts += [f"{gettext}/en-{code}.tsv" for code in GETTEXT_LANGUAGES]
  return ",".join(parts)


def _data(input_path: str, batch_size: int, max_predictions: int,
          mixup: bool = False, header: bool = False) -> InfoXlmDataConfig:
  return InfoXlmDataConfig(
      input_path=input_path, global_batch_size=batch_size,
      max_predictions_per_seq=max_predictions, masking_rate=0.15,
      sampling_exponent=0.7, is_training=True, mixup=mixup, header=header)


def infoxlm_objectives(monolingual: str, bitext: str, batch_size: int,
                       max_predictions: int, header: bool = False,
                       **xlco) -> ObjectivesConfig:
  """MMLM + TLM + XLCo (eq. 7, all of weight 1); `xlco` overrides XLCo's
  hyperparameters."""
  return ObjectivesConfig({
      "mmlm": MaskedLmObjectiveConfig(
          train_data=_data(monolingual, batch_size, max_predictions)),
      "tlm": TlmObjectiveConfig(
          train_data=_data(bitext, batch_size, max_predictions,
                           header=header)),
      "xlco": XlcoObjectiveConfig(
          train_data=_data(bitext, batch_size, max_predictions,
                           mixup=xlco.pop("mixup", False), header=header),
          **xlco)})


@exp_factory.register_config_factory("infoxlm/tiny")
def infoxlm_tiny() -> cfg.ExperimentConfig:
  """MMLM + TLM + XLCo on the offline multilingual data, on 2 CPU cores."""
  params = exp_factory.get_exp_config("cmlm/tiny")
  seq_length, train_steps = 48, 600
  params.task = SentenceEncoderTaskConfig(
      model=model_builder.SiameseEncoderConfig(
          encoder=encoders.BertEncoderConfig(
              vocab_size=params.task.model.encoder.vocab_size,
              hidden_size=128, num_layers=2, num_attention_heads=2,
              intermediate_size=256,
              max_position_embeddings=params.task.model.encoder
              .max_position_embeddings),
          num_projections=0),  # no CMLM here: no projection head
      tokenization=TokenizationConfig(vocab_file="", lower_case=False,
                                      seq_length=seq_length),
      objectives=infoxlm_objectives(
          tiny_monolingual_path(), tiny_bitext_path(), batch_size=32,
          max_predictions=8, header=True, layer=1, pooling="cls", momentum=0.99,
          queue_size=4096, temperature=0.25, queue_fill="partial"))
  params.trainer.train_steps = train_steps
  params.trainer.validation_interval = train_steps
  params.trainer.optimizer_config.learning_rate.polynomial.decay_steps = (
      train_steps)
  return params


@exp_factory.register_config_factory("infoxlm/base")
def infoxlm_base() -> cfg.ExperimentConfig:
  """Appendix B, table 10 (BASE); data, vocabulary and XLM-R start given."""
  params = cmlm_experiments.cmlm_en_base()
  train_steps = 150_000
  params.task = SentenceEncoderTaskConfig(
      model=model_builder.SiameseEncoderConfig(
          encoder=encoders.BertEncoderConfig(
              vocab_size=250_002, hidden_size=768, num_layers=12,
              num_attention_heads=12, intermediate_size=3072,
              max_position_embeddings=514),
          num_projections=0),
      tokenization=TokenizationConfig(lower_case=False, seq_length=256),
      objectives=infoxlm_objectives(
          "", "", batch_size=2048, max_predictions=40, layer=8,
          pooling="cls", momentum=0.999, queue_size=131_072,
          temperature=0.25, queue_fill="hold_off", mixup=True))
  params.trainer.train_steps = train_steps
  params.trainer.optimizer_config = cmlm_experiments._optimization(  # pylint: disable=protected-access
      "adamw", 2e-4, warmup_steps=10_000, decay_steps=train_steps,
      beta_1=0.9, beta_2=0.98, epsilon=1e-6, weight_decay_rate=0.01,
      gradient_clip_norm=1.0,  # table 10 (Model Garden's AdamW default too)
      exclude_from_weight_decay=cmlm_experiments._WEIGHT_DECAY_EXCLUDED)  # pylint: disable=protected-access
  return params
