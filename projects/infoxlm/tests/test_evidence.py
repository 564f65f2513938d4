"""projects/infoxlm/evidence.py: arms at equal compute from one seeded start."""
from cmlm.projects.infoxlm import evidence


def test_arms_share_one_start_and_equal_encoder_compute():
  args = evidence.parse_args(["--steps=10", "--start_steps=5"])
  arms = {arm.name: arm for arm in evidence.arms(args)}
  assert [a for a in arms.values() if a.control][0].name == "TLM+MMLM"
  assert arms["start"].compute is None
  evidence.protocol.check_equal_compute(list(arms.values()))
  # The XLCo arm spends half its sequences on contrast, 4 passes a pair.
  batches, xlco = evidence.arm_settings("+XLCo", args)
  assert batches == dict(mmlm=16, tlm=16, xlco=8)
  assert (xlco["layer"], xlco["pooling"]) == (0, "mean")  # what is scored
  assert evidence.arm_settings("XLCo m=0", args)[1]["momentum"] == 0.0
  params = evidence.infoxlm_params(
      {"eng": "e.txt"}, "pairs.tsv", evidence.multilingual_evidence.__file__,
      steps=10, batches=batches, seed=3, queue_size=64, init_checkpoint="x",
      **xlco)
  assert params.task.seed == 3 and params.task.init_checkpoint == "x"
  objectives = params.task.objectives
  assert objectives.xlco.train_data.global_batch_size == 8
  assert objectives.xlco.layer == 0 and objectives.xlco.pooling == "mean"
  control = evidence.infoxlm_params(
      {"eng": "e.txt"}, "pairs.tsv", evidence.multilingual_evidence.__file__,
      steps=10, batches=evidence.arm_settings("TLM+MMLM", args)[0], seed=3,
      queue_size=64)
  assert control.task.objectives.xlco.weight == 0  # left out
  assert not control.task.objectives.xlco.train_data.mixup
  assert control.task.objectives.mmlm.train_data.global_batch_size == 32


def test_xlco_arms_mix_with_another_corpus_and_one_contrasts_a_middle_layer():
  args = evidence.parse_args([])
  assert args.mixup_partner == "debian_reference"
  arms = {arm.name: arm for arm in evidence.arms(args)}
  assert set(evidence.DEFAULT_ARMS) == set(arms)
  batches, xlco = evidence.arm_settings(evidence.INTERMEDIATE, args)
  assert (xlco["layer"], xlco["pooling"]) == (1, "cls")
  assert arms[evidence.INTERMEDIATE].compute == arms["+XLCo"].compute
  params = evidence.infoxlm_params(
      {"eng": "e.txt"}, "pairs.tsv", evidence.multilingual_evidence.__file__,
      steps=10, batches=batches, seed=3, queue_size=64,
      partner_path="partner.tsv", **xlco)
  data = params.task.objectives.xlco.train_data
  assert data.mixup and data.mixup_partner_path == "partner.tsv"
  other = evidence.parse_args(["--intermediate_layer=2",
                               "--intermediate_pooling=mean"])
  assert evidence.arm_settings(evidence.INTERMEDIATE, other)[1][
      "layer"] == 2
