"""projects/misad/evidence.py: MLM gets MiSAD's encoder passes per step."""
import pytest

from cmlm.projects.misad import evidence


def test_mlm_control_reads_as_many_sequences_as_misad_from_the_same_start():
  args = evidence.parse_args(["--steps=10", "--batch_size=8"])
  arms = {arm.name: arm for arm in evidence.arms(args)}
  assert arms["MLM"].control and arms["start"].compute is None
  evidence.check_compute(list(arms.values()), args)
  # S, R, w and 4 scored copies of S: 7 passes of 64 tokens a sentence.
  assert arms["MLM+MiSAD"].compute.token_passes == 10 * 8 * 64 * 7
  mlm = evidence.overrides("START", "ngrams.txt", "MLM", 2, args)
  misad = evidence.overrides("START", "ngrams.txt", "MLM+MiSAD", 2, args)
  assert "global_batch_size=56" in mlm and "misad_weight=0.0" in mlm
  assert "global_batch_size=8" in misad and "misad_weight=1.0" in misad
  for text in (mlm, misad):
    assert "task.seed=2" in text and "task.init_checkpoint=START" in text


def test_the_dose_control_is_declared_and_the_only_arm_off_equal_compute():
  args = evidence.parse_args(["--steps=10", "--batch_size=8"])
  arms = evidence.arms(args)
  dose = {arm.name: arm for arm in arms}["MLM b8"]
  assert "dose control" in dose.description
  # MiSAD's MLM dose (8 sentences a step) at 1/7 of the compute.
  assert dose.compute.token_passes * 7 == 10 * 8 * 64 * 7
  text = evidence.overrides("START", "ngrams.txt", "MLM b8", 2, args)
  assert "global_batch_size=8" in text and "misad_weight=0.0" in text
  evidence.check_compute(arms, args)  # declared: accepted
  with pytest.raises(ValueError, match="not at equal compute"):
    evidence.protocol.check_equal_compute(arms)  # the check itself holds
  undeclared = [evidence.protocol.Arm("MLM b8 undeclared", dose.compute)]
  with pytest.raises(ValueError, match="not at equal compute"):
    evidence.check_compute(arms + undeclared, args)
