"""experiments/cmlm_vs_mlm.py: equal encoder compute, the conditioning off."""
import json

import pytest

from cmlm.experiments import cmlm_vs_mlm


def test_mlm_reads_as_many_token_positions_as_cmlm_and_no_conditioning():
  cmlm = cmlm_vs_mlm.experiment(True, steps=10, batch_size=32, seed=4)
  mlm = cmlm_vs_mlm.experiment(False, steps=10, batch_size=32, seed=4)
  cmlm_data = cmlm.task.objectives.cmlm.train_data
  mlm_data = mlm.task.objectives.cmlm.train_data
  # CMLM reads s1 (48) and s2 with 15 projections (63); MLM s2 alone (48).
  assert mlm_data.global_batch_size == 74  # 32 x (2 x 48 + 15) / 48
  assert (cmlm_vs_mlm.compute(cmlm).token_passes
          == cmlm_vs_mlm.compute(mlm).token_passes == 10 * 32 * 111)
  assert cmlm.trainer.train_steps == mlm.trainer.train_steps == 10
  assert cmlm.task.objectives.cmlm.condition
  assert not mlm.task.objectives.cmlm.condition
  # Everything else is the same experiment, the seed included.
  assert cmlm.task.model.as_dict() == mlm.task.model.as_dict()
  assert cmlm_data.input_path == mlm_data.input_path
  assert cmlm.task.seed == mlm.task.seed == 4
  args = cmlm_vs_mlm.parse_args(["--steps=10", "--pcr_sample=0"])
  assert [a.name for a in cmlm_vs_mlm.arms(args) if a.control] == ["MLM"]
  assert "sts-b+PCR" not in cmlm_vs_mlm.measures(args)


def test_pcr_removes_the_shared_direction_fitted_on_training_sentences_only(
    tmp_path):
  import numpy as np
  import pytest
  from cmlm.data_pipelines import cmlm_dataloader, corpus
  paragraphs = [f"Paragraph {i} starts here. It ends in sentence {i}."
                for i in range(40)]
  (tmp_path / "text.txt").write_text("\n\n".join(paragraphs) + "\n")
  config = cmlm_dataloader.CmlmDataConfig(input_path=str(tmp_path),
                                          heldout_percent=30)
  sample = cmlm_vs_mlm.pcr_sentences(config, 1000)
  heldout = [s for document in corpus.sentence_documents(
      corpus.read_documents(str(tmp_path), "heldout", 30)) for s in document]
  assert heldout and sample and not set(sample) & set(heldout)
  assert len(cmlm_vs_mlm.pcr_sentences(config, 3)) == 3
  # Every embedding shares one direction; +PCR takes it out of each.
  shared = np.array([3.0, 4.0, 0.0, 0.0]) / 5
  rng = np.random.default_rng(0)
  table = {s: 10 * shared + 0.1 * rng.normal(size=4) for s in sample}
  encoder = lambda sentences, batch_size=256: np.stack(
      [table[s] for s in sentences])
  component = cmlm_vs_mlm.pcr.first_principal_component(encoder(sample))
  removed = cmlm_vs_mlm.with_pcr(encoder, component)(sample)
  assert abs(abs(component @ shared) - 1) < 1e-3
  np.testing.assert_allclose(removed @ component, 0, atol=1e-9)
  with pytest.raises(SystemExit):
    cmlm_vs_mlm.parse_args(["--tasks=sts-b,nope"])


def test_next_sequence_mrr_is_one_when_each_s1_points_at_its_s2():
  import numpy as np
  pairs = [(f"a{i}", f"b{i}") for i in range(6)]
  # Unnormalised, different lengths: the measure is by cosine.
  encoder = lambda sentences: np.stack(
      [(1 + int(s[1:])) * np.eye(6)[int(s[1:])] for s in sentences])
  assert cmlm_vs_mlm.next_sequence_mrr(encoder, pairs) == 1.0
  shifted = [(f"a{i}", f"b{(i + 1) % 6}") for i in range(6)]
  assert cmlm_vs_mlm.next_sequence_mrr(encoder, shifted) < 1.0


def test_the_start_is_the_seeds_initialisation_and_reads_with_either_pooling(
    tmp_path):
  """write_start gives the same encoder for a seed whichever arm's config
  (the arms differ in the objective only) and another for another seed;
  load_encoder's pooling override reads the same weights mean- or
  max-pooled, max being cmlm/demo's own."""
  import numpy as np
  import tensorflow as tf
  from cmlm.evaluation import encoders
  def start(condition, seed, name):
    params = cmlm_vs_mlm.experiment(condition, 2, 32, seed)
    directory = str(tmp_path / name)
    return directory, cmlm_vs_mlm.write_start(params, directory)
  def weights(checkpoint):
    reader = tf.train.load_checkpoint(checkpoint)
    return {k: reader.get_tensor(k) for k in
            reader.get_variable_to_shape_map() if k.startswith("encoder/")}
  run, checkpoint = start(True, 3, "cmlm3")
  same = weights(start(False, 3, "mlm3")[1])
  other = weights(start(True, 4, "cmlm4")[1])
  first = weights(checkpoint)
  assert first.keys() == same.keys() == other.keys() and len(first) > 10
  assert all(np.array_equal(first[k], same[k]) for k in first)
  assert not all(np.array_equal(first[k], other[k]) for k in first)
  sentences = ["A man plays a guitar.", "The cat sleeps on the mat."]
  read = {pooling: encoders.load_encoder(run, checkpoint, False,
                                         pooling=pooling)(sentences)
          for pooling in (None, "mean", "max")}
  assert read["mean"].shape == read["max"].shape == (2, read[None].shape[1])
  np.testing.assert_array_equal(read[None], read["max"])  # cmlm/demo's own
  assert not np.allclose(read["mean"], read["max"])
  with pytest.raises(ValueError, match="pooling must be one of"):
    encoders.load_encoder(run, checkpoint, False, pooling="median")


# STS-B dev means per arm and pooling (MLM prefers mean, the others max)
# and a primary measure's, which prefers otherwise.
SELECTION_MEANS = {"start": {"mean": 40.0, "max": 45.0},
                   "MLM": {"mean": 60.0, "max": 50.0},
                   "CMLM": {"mean": 55.0, "max": 58.0}}
PRIMARY_MEANS = {"start": {"mean": 30.0, "max": 20.0},
                 "MLM": {"mean": 10.0, "max": 70.0},
                 "CMLM": {"mean": 90.0, "max": 65.0}}


def _units(selection_means, primary):
  """{arm: {seed: measures}} with STS-B dev and one primary measure per
  pooling: `selection_means[arm][pooling]` and `primary[arm][pooling]`,
  seed s adding s / 10 (scalars)."""
  from cmlm.experiments import cmlm_vs_mlm_plan as plan
  scalar = lambda v: {"kind": "scalar", "value": v}
  return {arm: {seed: {
      plan.reading(measure, pooling): scalar(table[arm][pooling] + seed / 10)
      for measure, table in ((plan.SELECTION, selection_means),
                             ("sts-b train", primary))
      for pooling in plan.READ_POOLINGS} for seed in (1, 2, 3)}
          for arm in selection_means}


def test_each_arm_is_read_with_its_own_pooling_chosen_on_the_selection_set():
  """MLM scores higher mean-pooled on STS-B dev, CMLM and the start
  max-pooled: each arm's primary measure is read at its own choice, whatever
  the primary measure would prefer; the results file names the choices and
  keeps every reading, and renders."""
  from cmlm.experiments import cmlm_vs_mlm_plan as plan
  from cmlm.experiments import evidence_protocol as protocol
  from cmlm.experiments import evidence_tables
  results = _units(SELECTION_MEANS, PRIMARY_MEANS)
  chosen = plan.chosen_poolings(results, ["start", "MLM", "CMLM"])
  assert {a: c["pooling"] for a, c in chosen.items()} == {
      "start": "max", "MLM": "mean", "CMLM": "max"}
  assert chosen["MLM"]["selection_means"]["mean"] == pytest.approx(60.2)
  names = ["sts-b train", plan.SELECTION]
  own = plan.own_readings(results, chosen, names)
  label = plan.label("sts-b train")
  assert label.endswith("(primary)")
  assert own["MLM"][2][label]["value"] == pytest.approx(10.2)
  assert own["CMLM"][2][label]["value"] == pytest.approx(65.2)
  assert plan.label(plan.SELECTION) == "sts-b dev (selection set)"
  compute = protocol.Compute(10, (protocol.Work("s", 4, 8, 1),))
  arms = [protocol.Arm("start", None), protocol.Arm("MLM", compute, True),
          protocol.Arm("CMLM", compute)]
  units = {f"{a} seed {s}": {"commit": "c1", "cpu": "Xeon", "cores": 2,
                             "isa": {"avx2": True, "amx_tile": False},
                             "date": "2026-11-27T10:00:00+00:00",
                             "command": "python x.py"}
           for a in results for s in (1, 2, 3)}
  units["CMLM seed 3"]["commit"] = "c2"
  result = plan.results_file(arms, results, chosen, units, names, [1, 2, 3],
                             {"steps": 10}, "t", "units", 100)
  assert result["measures"] == [label, "sts-b dev (selection set)"]
  assert result["plan"]["primary_measures"][1] == label
  assert [a["read_pooling"] for a in result["arms"]] == ["max", "mean", "max"]
  assert result["per_seed"]["MLM"][label] == pytest.approx([10.1, 10.2, 10.3])
  assert result["per_seed"]["MLM"]["sts-b train [max]"] == pytest.approx(
      [70.1, 70.2, 70.3])
  assert result["comparison"]["CMLM"][label]["per_seed"] == pytest.approx(
      [55.0, 55.0, 55.0])
  assert result["commit"] == ["c1", "c2"] and result["mixed_commits"]
  assert result["cpu"] == "Xeon (2 cores; avx2)"
  rendered = evidence_tables.render_results(result)
  assert "| MLM (control; mean pooling) | CMLM (max pooling) |" in rendered
  assert json.loads(json.dumps(evidence_tables.with_comparison(result)[
      "comparison"])) == json.loads(json.dumps(result["comparison"]))


def test_the_primary_measures_come_first_and_the_selection_set_is_required():
  args = cmlm_vs_mlm.parse_args([])
  assert args.seeds == [1, 2, 3, 4, 5]
  assert args.arms == ["start", "MLM", "CMLM"]
  names = cmlm_vs_mlm.measures(args)
  assert names[:2] == ["sick-r train+trial", "sts-b train"]
  assert "sts-b" in names and "sick-r" not in names
  assert "sick-r train+trial+PCR" in names
  all_arms = cmlm_vs_mlm.arms(args)
  assert [a.name for a in all_arms if a.compute is None] == ["start"]
  cmlm_vs_mlm.protocol.check_equal_compute(all_arms)
  with pytest.raises(SystemExit):
    cmlm_vs_mlm.parse_args(["--tasks=sick-r train+trial,cr"])


@pytest.mark.slow
def test_a_trained_arm_starts_from_the_start_arm(tmp_path):
  """One CMLM step at the warm-up's first learning rate (0) leaves the
  encoder where training built it: exactly the start arm of the seed."""
  import numpy as np
  from cmlm.evaluation import encoders
  from cmlm.training import train
  params = cmlm_vs_mlm.experiment(True, 1, 4, seed=5)
  trained = str(tmp_path / "trained")
  train.run(params, trained, mode="train")
  start = str(tmp_path / "start")
  checkpoint = cmlm_vs_mlm.write_start(params, start)
  sentences = ["A man plays a guitar.", "The cat sleeps on the mat."]
  for pooling in ("mean", "max"):
    np.testing.assert_array_equal(
        encoders.load_encoder(trained, None, False, pooling=pooling)(
            sentences),
        encoders.load_encoder(start, checkpoint, False, pooling=pooling)(
            sentences))


def test_the_check_reads_the_results_file_again_from_its_units(tmp_path):
  """`evidence_tables.py --check` rebuilds CMLM vs MLM's file from its units
  through the plan: each arm's poolings chosen again, every reading; a unit
  that moves after the file was written is caught, and so is one whose
  change would flip an arm's chosen pooling."""
  from cmlm.experiments import cmlm_vs_mlm_plan as plan
  from cmlm.experiments import evidence_protocol as protocol
  from cmlm.experiments import results_check
  results = _units(SELECTION_MEANS, PRIMARY_MEANS)
  store = protocol.UnitStore(str(tmp_path), units_dir=str(tmp_path / "u"))
  for arm, by_seed in results.items():
    for seed, measures in by_seed.items():
      store.save(arm, seed, {"measures": measures, "commit": "c1",
                             "cpu": "Xeon", "cores": 2, "isa": {},
                             "date": "2026-11-27T10:00:00+00:00",
                             "command": "python x.py"})
  units = store.units([protocol.Arm(a, None) for a in results], [1, 2, 3])
  compute = protocol.Compute(10, (protocol.Work("s", 4, 8, 1),))
  arms = [protocol.Arm("start", None), protocol.Arm("MLM", compute, True),
          protocol.Arm("CMLM", compute)]
  chosen = plan.chosen_poolings(results, ["start", "MLM", "CMLM"])
  names = ["sts-b train", plan.SELECTION]
  result = json.loads(json.dumps(plan.results_file(
      arms, results, chosen, units, names, [1, 2, 3], {"steps": 10}, "t",
      "u", 100)))
  result["units"] = "u"
  check = lambda: results_check.unit_differences(
      "r.json", result, str(tmp_path), bootstrap=False)
  assert check() == []
  moved = dict(results["CMLM"][2])
  moved[plan.reading("sts-b train", "max")] = {"kind": "scalar",
                                                "value": 1.0}
  store.save("CMLM", 2, dict(store.load("CMLM", 2), measures=moved))
  assert check() == ["per_seed"]
  flipped = dict(results["MLM"][1])  # max now wins MLM's selection mean
  flipped[plan.reading(plan.SELECTION, "max")] = {"kind": "scalar",
                                                   "value": 99.0}
  store.save("CMLM", 2, dict(store.load("CMLM", 2),
                             measures=results["CMLM"][2]))
  store.save("MLM", 1, dict(store.load("MLM", 1), measures=flipped))
  assert check() == ["per_seed"]
