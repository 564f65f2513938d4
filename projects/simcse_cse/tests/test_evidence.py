"""projects/simcse_cse/evidence.py: SimCSE gets CMLM-CSE's encoder passes."""
import pytest

from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.projects.simcse_cse import evidence


@pytest.mark.parametrize("layers,passes,simcse_steps", [(2, 4.0, 600),
                                                        (6, 2 + 7 / 6, 475)])
def test_simcse_arms_get_as_many_more_steps_as_equal_passes_need(
    layers, passes, simcse_steps):
  assert evidence.cmlm_cse_passes(layers) == pytest.approx(passes)
  arms = {a.name: a for a in evidence.arms(300, layers, 32)}
  assert arms["SimCSE"].control and arms["start"].compute is None
  assert arms["SimCSE"].compute.steps == simcse_steps
  assert arms["SimCSE no dropout"].compute.steps == simcse_steps
  assert arms["CMLM-CSE"].compute.steps == 300
  evidence.protocol.check_equal_compute(list(arms.values()))


def test_arms_differ_only_in_objective_dropout_and_steps():
  args = evidence.parse_args(["--starts=cmlm"])
  # The start's vocabulary, not the tiny recipes' embedded one (a MiniLM
  # start has 30522 tokens against the embedded 8520).
  start = TokenizationConfig(vocab_file="START/vocab.txt", lower_case=True,
                             text_normalization="huggingface")
  simcse = evidence.overrides("SimCSE", "START", 600, 2, args, 1e-4, start)
  cse = evidence.overrides("CMLM-CSE", "START", 300, 2, args, 1e-4, start)
  off = evidence.overrides("SimCSE no dropout", "START", 600, 2, args, 1e-4,
                           start)
  assert (simcse[0], cse[0], off[0]) == ("simcse/tiny", "cmlm_cse/tiny",
                                         "simcse/tiny")
  for _, values in (simcse, cse, off):
    assert "task.seed=2" in values and "task.init_checkpoint=START" in values
    assert "task.tokenization.vocab_file=START/vocab.txt" in values
    assert "task.tokenization.text_normalization=huggingface" in values
  assert "task.model.encoder.dropout_rate=0.0" in off[1]
  assert not any("dropout" in v for v in simcse[1] + cse[1])
