"""TLM and MMLM (masked_lm_objective.py, infoxlm_data.py;
InfoXLM sections 3.1-3.2, 3.4) and XLCo's mixup pairs (3.3)."""
import collections

import numpy as np
import pytest

from cmlm.projects.infoxlm import infoxlm_data
from cmlm.data_pipelines import tokenization
from cmlm.objectives import base
from cmlm.projects.infoxlm import masked_lm_objective as masked_lm
from tests.data_pipelines import data_helpers
from cmlm.projects.infoxlm.tests import infoxlm_helpers
from cmlm.training import task as task_lib

SEQ_LENGTH = 24


def _tokenization(tmp_path):
  return tokenization.TokenizationConfig(
      vocab_file=data_helpers.write_tiny_vocab(tmp_path),
      seq_length=SEQ_LENGTH)


def _data(path, **kwargs):
  return infoxlm_data.InfoXlmDataConfig(
      input_path=path, global_batch_size=8, max_predictions_per_seq=6,
      masking_rate=0.3, is_training=True, seed=5, **kwargs)


def test_tlm_masks_both_sides_with_segments_and_positions_reset(tmp_path):
  config = _tokenization(tmp_path)
  dataset = infoxlm_data.build_tlm_dataset(
      _data(infoxlm_helpers.write_bitext(tmp_path)), config)
  mask_id = 4
  for batch in dataset.take(3):
    batch = {k: v.numpy() for k, v in batch.items()}
    for row in range(8):
      ids, types = batch["input_word_ids"][row], batch["input_type_ids"][row]
      mask, positions = batch["input_mask"][row], batch["position_ids"][row]
      separators = np.flatnonzero(ids == 3)
      first_end = separators[0]  # [CLS] x [SEP] | y [SEP]
      assert ids[0] == 2 and len(separators) == 2
      assert not types[:first_end + 1].any()
      assert types[first_end + 1:mask.sum()].all()
      # Positions restart at 0 where y starts, and count up on each side.
      np.testing.assert_array_equal(positions[:first_end + 1],
                                    np.arange(first_end + 1))
      np.testing.assert_array_equal(
          positions[first_end + 1:mask.sum()],
          np.arange(mask.sum() - first_end - 1))
      used = batch["masked_lm_positions"][row][
          batch["masked_lm_weights"][row] > 0]
      sides = set(types[used])
      assert sides == {0, 1}, (ids, used)  # both sides hold masked tokens
      assert np.all(ids[used] != 2) and np.all(ids[used] != 3)
      assert (ids[used] == mask_id).any() or len(used) < 4


def test_mmlm_samples_languages_by_the_exponent(tmp_path):
  assert infoxlm_data.sampling_probabilities([30, 10], 1.0) == (
      pytest.approx([0.75, 0.25]))
  assert infoxlm_data.sampling_probabilities([30, 10], 0.0) == (
      pytest.approx([0.5, 0.5]))
  expected = np.array([0.75, 0.25]) ** 0.7
  expected /= expected.sum()
  assert infoxlm_data.sampling_probabilities([30, 10], 0.7) == (
      pytest.approx(expected))
  path = infoxlm_helpers.write_monolingual(tmp_path, ("en", "de"), (300, 100))
  dataset = infoxlm_data.build_mmlm_dataset(
      _data(path, sampling_exponent=0.7), _tokenization(tmp_path))
  for batch in dataset.take(5):  # every line has masked tokens
    assert (batch["masked_lm_weights"].numpy().sum(axis=1) > 0).all()
  sampled = collections.Counter()
  for line in _sampled_lines(path, 0.7, 2000):
    sampled[line.split()[1]] += 1
  share = sampled["en"] / sum(sampled.values())
  assert share == pytest.approx(expected[0], abs=0.04)


def _sampled_lines(path, exponent, count):
  texts = infoxlm_data.read_monolingual(path)
  params = _data(path, sampling_exponent=exponent)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  stream = infoxlm_data._sampled(  # pylint: disable=protected-access
      [tf.data.Dataset.from_tensor_slices(v) for v in texts.values()],
      [len(v) for v in texts.values()], params, None)
  return [t.decode() for t in stream.take(count).as_numpy_iterator()]


def test_mixup_joins_two_pairs_with_each_translation_on_the_other_side(
    tmp_path):
  config = _tokenization(tmp_path)
  path = infoxlm_helpers.write_bitext(tmp_path, num_pairs=40)
  partner = infoxlm_helpers.write_bitext(tmp_path, num_pairs=40, seed=1,
                                         name="partner.tsv",
                                         first_number=500)
  dataset = infoxlm_data.build_xlco_dataset(
      _data(path, mixup=True, mixup_partner_path=partner), config)
  vocab = data_helpers.TINY_VOCAB
  orders = set()
  for batch in dataset.take(4):
    for row in range(8):
      query, key = (_pair_numbers(
          batch[f"{side}_input_word_ids"].numpy()[row], vocab)
                    for side in ("source", "target"))
      # The key holds the translations of the query's two sentences.
      assert len(query) == 2 and sorted(query) == sorted(key)
      # Section 3.3: one training pair and "a randomly sampled translation
      # pair from another parallel corpus" (numbered from 500), never two
      # pairs of the training stream.
      assert sorted(int(n) >= 500 for n in query) == [False, True]
      orders.add(query == key)
  assert orders == {True, False}  # the two orders are drawn independently


@pytest.mark.parametrize("partner, message", [
    ("", "mixup_partner_path is empty"),
    ("same", "a corpus of input_path"),
    ("missing", "is not a file")])
def test_mixup_partner_must_be_another_corpus(tmp_path, partner, message):
  path = infoxlm_helpers.write_bitext(tmp_path, num_pairs=40)
  partner = {"same": path, "missing": str(tmp_path / "none.tsv")}.get(
      partner, partner)
  with pytest.raises(ValueError, match=message):
    infoxlm_data.validate_config(
        _data(path, mixup=True, mixup_partner_path=partner),
        _tokenization(tmp_path), "xlco.train_data")


def _pair_numbers(ids, vocab):
  """The pair number of each sentence of "[CLS] a [SEP] b [SEP]": every
  sentence of `write_bitext` holds its pair's digits."""
  numbers, digits = [], ""
  for token_id in ids[1:]:
    if token_id == 3:  # [SEP] ends a sentence
      numbers.append(digits)
      digits = ""
    elif vocab[token_id].isdigit():
      digits += vocab[token_id]
  return numbers


def test_tlm_and_mmlm_losses_over_heads_tied_to_the_embeddings(tmp_path):
  config = task_lib.SentenceEncoderTaskConfig()
  config.model.encoder.override({
      "vocab_size": len(data_helpers.TINY_VOCAB), "hidden_size": 16,
      "num_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
      "max_position_embeddings": SEQ_LENGTH + 1})
  config.model.num_projections = 1
  config.tokenization = _tokenization(tmp_path)
  config.objectives = base.ObjectivesConfig({
      "mmlm": masked_lm.MaskedLmObjectiveConfig(train_data=_data(
          infoxlm_helpers.write_monolingual(tmp_path))),
      "tlm": masked_lm.TlmObjectiveConfig(train_data=_data(
          infoxlm_helpers.write_bitext(tmp_path)))})
  task = task_lib.SentenceEncoderTask(config)
  for objective in task.objectives.values():
    objective.validate("train")
  model = task.build_model()
  batch = next(iter(task.build_inputs(config.train_data)))
  outputs = model(batch, training=True)
  loss = task.build_losses(batch, outputs)
  assert np.isfinite(float(loss)) and float(loss) > 0
  assert {"encoder", "mmlm_head", "tlm_head"} == set(model.checkpoint_items)
  # Both heads predict with the encoder's own word-embedding table.
  table = model.encoder.transformer.get_embedding_table()
  for name in ("mmlm", "tlm"):
    assert model.heads[name].embedding_table is table


def test_bad_data_settings_are_one_clear_error(tmp_path):
  config = _tokenization(tmp_path)
  with pytest.raises(ValueError, match="input_path is empty"):
    infoxlm_data.validate_config(_data(""), config, "x", monolingual=True)
  with pytest.raises(ValueError, match="names no language"):
    infoxlm_data.validate_config(_data("a.txt"), config, "x",
                                 monolingual=True)
  with pytest.raises(ValueError, match="sampling_exponent must be >= 0"):
    infoxlm_data.validate_config(_data("a.tsv", sampling_exponent=-1),
                                 config, "x")
