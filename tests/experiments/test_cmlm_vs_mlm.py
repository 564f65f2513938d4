"""experiments/cmlm_vs_mlm.py: equal encoder compute, the conditioning off."""
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
