"""The [UNK] rate check: a vocabulary of the wrong casing is refused."""
import pytest

import cmlm.data_pipelines  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import unk_rate
from tests.data_pipelines import data_helpers as helpers

SENTENCES = ["The cat sat on the mat.", "A dog ran, and the cat sat!"] * 20
CAPITALISED = [s.upper() for s in SENTENCES]


def _config(tmp_path, lower_case, **kwargs):
  return tokenization.TokenizationConfig(
      vocab_file=helpers.write_tiny_vocab(tmp_path), lower_case=lower_case,
      **kwargs)


def test_measure_counts_unknown_tokens_with_both_casings(tmp_path):
  cased = unk_rate.measure(_config(tmp_path, lower_case=False), CAPITALISED)
  # Every word is unknown in upper case; only the punctuation is known.
  assert 0.5 < cased.rate < 1 and cased.other_casing_rate == 0
  assert cased.sentences == len(CAPITALISED)
  fine = unk_rate.measure(_config(tmp_path, lower_case=True), CAPITALISED)
  assert fine.rate == 0 and fine.other_casing_rate == cased.rate


def test_a_casing_mismatch_is_refused_naming_the_setting(tmp_path, capsys):
  config = _config(tmp_path, lower_case=False)
  with pytest.raises(ValueError) as raised:
    unk_rate.check(config, CAPITALISED, "cmlm's training data")
  message = str(raised.value)
  assert "\n" not in message
  assert "set task.tokenization.lower_case=true" in message
  rate = unk_rate.measure(config, CAPITALISED).rate
  assert f"[UNK] tokens: {100 * rate:.1f}%" in capsys.readouterr().out
  # As a warning (eval, pcr): printed, not raised.
  unk_rate.check(config, CAPITALISED, "the eval data", refuse=False)
  assert "Warning:" in capsys.readouterr().out


def test_the_threshold_is_configurable_and_a_good_casing_passes(tmp_path,
                                                               capsys):
  unk_rate.check(_config(tmp_path, lower_case=True), CAPITALISED, "text")
  unk_rate.check(_config(tmp_path, lower_case=False, max_unk_rate=1.0),
                 CAPITALISED, "text")
  assert "Warning" not in capsys.readouterr().out
  # Many [UNK] without a casing cause: a warning that the vocabulary fits
  # the text poorly, not a refusal.
  unk_rate.check(_config(tmp_path, lower_case=True), ["Zebras quack."] * 5,
                 "text")
  assert "covers this text poorly" in capsys.readouterr().out


def test_sample_corpus_reads_only_what_it_needs(tmp_path):
  directory = tmp_path / "corpus"
  helpers.write_numbered_corpus(directory, num_documents=50, num_files=5)
  sample = unk_rate.sample_corpus(str(directory), max_sentences=20)
  assert len(sample) == 20
  assert len(set(sample)) > 10


def test_a_casing_mismatch_is_caught_by_the_vocabulary_s_entries(tmp_path,
                                                                 capsys):
  """A cased vocabulary that also holds every lower-case character reads
  0% [UNK] with both casings; its capitalised entries, which lower-cased
  text never produces, give it away. The reverse: an uncased vocabulary
  read with lower_case=false, on text with few enough capitals for the
  [UNK] rate to stay under its limit."""
  letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
  cased_vocab = (helpers.SPECIAL_TOKENS + helpers.WORDS +
                 [c for c in letters if c not in helpers.WORDS] +
                 ["##" + c for c in letters] + ["The", "Cat", "A", "Dog"])
  path = helpers.write_tiny_vocab(tmp_path, cased_vocab, name="cased.txt")
  lower = tokenization.TokenizationConfig(vocab_file=path, lower_case=True)
  measured = unk_rate.measure(lower, SENTENCES)
  assert measured.rate == measured.other_casing_rate == 0
  with pytest.raises(ValueError) as raised:
    unk_rate.check(lower, SENTENCES, "cmlm's training data")
  message = str(raised.value)
  assert "\n" not in message and "'The'" in message
  assert message.endswith("set task.tokenization.lower_case=false.")
  # Not a problem with the casing it was made for, nor without text.
  unk_rate.check(tokenization.TokenizationConfig(vocab_file=path,
                                                 lower_case=False),
                 SENTENCES, "text")
  with pytest.raises(ValueError, match="is cased"):
    unk_rate.check(lower, [], "text")

  uncased = helpers.write_tiny_vocab(tmp_path)
  config = tokenization.TokenizationConfig(vocab_file=uncased,
                                           lower_case=False)
  text = ["the cat sat on the mat ."] * 30 + ["The cat sat ."] * 4  # ~2%
  assert unk_rate.measure(config, text).rate < config.max_unk_rate
  with pytest.raises(ValueError, match=r"of the words of text hold upper-case"
                     r" .* is uncased .* set task.tokenization.lower_case="
                     r"true\.$"):
    unk_rate.check(config, text, "text")
  unk_rate.check(config, [s.lower() for s in text], "text")
  unk_rate.check(tokenization.TokenizationConfig(vocab_file=uncased,
                                                 lower_case=True), text,
                 "text")
  assert "Warning" not in capsys.readouterr().out
