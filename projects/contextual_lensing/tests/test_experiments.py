"""The contextual lensing experiments (Kiros et al. 2020)."""
import pytest

from cmlm.projects.contextual_lensing import registry_imports  # noqa: F401  (registers the project)
from official.core import exp_factory
from cmlm.training import run_config

LENSING = {"lensing/tiny": ("classifier", "simple"),
           "lensing/tiny_ranker": ("ranker", "simple"),
           "lensing/nli": ("classifier", "gated_conv"),
           "lensing/translate": ("ranker", "simple")}


@pytest.mark.parametrize("name", sorted(LENSING))
def test_lensing_experiments_freeze_the_core_and_train_a_lens(name):
  params = exp_factory.get_exp_config(name)
  objective, lens = LENSING[name]
  assert params.task.objectives.names() == [objective]
  assert params.task.model.pooling_head.type == lens
  assert not params.task.model.trainable_core
  params.task.model.validate()
  if objective == "classifier":  # the paper's two-layer network
    assert getattr(params.task.objectives, objective).hidden_size > 0
  else:
    assert getattr(params.task.objectives, objective).margin in (0.1, 0.2,
                                                                 0.3)


@pytest.mark.slow
def test_a_core_run_gives_its_encoder_but_the_lens_stays(tiny_run):
  params = run_config.build_params(
      "lensing/nli", params_override=f"task.init_checkpoint={tiny_run[0]}")
  model = params.task.model
  assert model.encoder.hidden_size == 16  # the tiny run's
  assert model.pooling_head.type == "gated_conv" and model.pooling_head.output_size == 1024
  assert not model.trainable_core
  assert params.task.tokenization.vocab_file  # the run's vocabulary
