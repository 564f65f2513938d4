"""projects/contextual_lensing/evidence.py: lenses over one frozen core."""
from cmlm.projects.contextual_lensing import evidence


def test_lenses_see_the_same_core_passes_and_meanpool_trains_nothing():
  args = evidence.parse_args(["--steps=20", "--batch_size=8"])
  arms = {arm.name: arm for arm in evidence.arms(args, seq_length=48)}
  assert arms["MeanPool"].control and arms["MeanPool"].compute is None
  assert (arms["Simple"].compute.token_passes
          == arms["GatedConv"].compute.token_passes == 20 * 16 * 48)
  evidence.protocol.check_equal_compute(list(arms.values()))


def test_each_arm_sets_its_lens_and_the_seed_over_the_frozen_core(tmp_path):
  args = evidence.parse_args([])
  core = tmp_path / "core"
  core.mkdir()
  # A core whose sequence length is 48 (the lens reads at most 64).
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  from official.core import train_utils  # pylint: disable=g-import-not-at-top
  from cmlm.experiments import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top
  train_utils.serialize_config(exp_factory.get_exp_config("cmlm/tiny"),
                               str(core))
  gated = evidence.override("GatedConv", str(core), 3, "snli.jsonl", args)
  mean = evidence.override("MeanPool", str(core), 3, "snli.jsonl", args)
  assert gated["task"]["model"]["pooling_head"]["type"] == "gated_conv"
  assert mean["task"]["model"]["pooling_head"] == {"type": "mean"}
  assert gated["task"]["seed"] == 3 and gated["task"]["init_checkpoint"] == (
      str(core))
  assert gated["task"]["tokenization"]["seq_length"] == 48
  assert gated["trainer"]["train_steps"] == args.steps
  assert mean["trainer"]["train_steps"] == 1
