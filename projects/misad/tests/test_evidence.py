"""projects/misad/evidence.py: MLM gets MiSAD's encoder passes per step."""
from cmlm.projects.misad import evidence


def test_mlm_control_reads_as_many_sequences_as_misad_from_the_same_start():
  args = evidence.parse_args(["--steps=10", "--batch_size=8"])
  arms = {arm.name: arm for arm in evidence.arms(args)}
  assert arms["MLM"].control and arms["start"].compute is None
  evidence.protocol.check_equal_compute(list(arms.values()))
  # S, R, w and 4 scored copies of S: 7 passes of 64 tokens a sentence.
  assert arms["MLM+MiSAD"].compute.token_passes == 10 * 8 * 64 * 7
  mlm = evidence.overrides("START", "ngrams.txt", "MLM", 2, args)
  misad = evidence.overrides("START", "ngrams.txt", "MLM+MiSAD", 2, args)
  assert "global_batch_size=56" in mlm and "misad_weight=0.0" in mlm
  assert "global_batch_size=8" in misad and "misad_weight=1.0" in misad
  for text in (mlm, misad):
    assert "task.seed=2" in text and "task.init_checkpoint=START" in text
