"""experiments/cmlm_vs_mlm.py: equal encoder compute, the conditioning off."""
from experiments import cmlm_vs_mlm


def test_mlm_gets_twice_the_batch_and_no_conditioning_for_equal_compute():
  cmlm = cmlm_vs_mlm.experiment(True, steps=10, batch_size=8)
  mlm = cmlm_vs_mlm.experiment(False, steps=10, batch_size=8)
  cmlm_data = cmlm.task.objectives.cmlm.train_data
  mlm_data = mlm.task.objectives.cmlm.train_data
  # Encoder passes per step: CMLM reads s1 and s2, MLM s2 alone.
  assert 2 * cmlm_data.global_batch_size == mlm_data.global_batch_size
  assert cmlm.trainer.train_steps == mlm.trainer.train_steps == 10
  assert cmlm.task.objectives.cmlm.condition
  assert not mlm.task.objectives.cmlm.condition
  # Everything else is the same experiment.
  assert cmlm.task.model.as_dict() == mlm.task.model.as_dict()
  assert cmlm_data.input_path == mlm_data.input_path
