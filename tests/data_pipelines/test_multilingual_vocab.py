"""Multilingual vocabulary with language smoothing (paper section 4.4)."""
import pytest

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import multilingual_vocab


def test_smoothing_weights_reshape_language_shares():
  totals = {"en": 9000, "ru": 1000}
  for exponent, ru_share in ((1.0, 0.1), (0.0, 0.5),
                             (0.3, 0.1 ** 0.3 / (0.1 ** 0.3 + 0.9 ** 0.3))):
    weights = multilingual_vocab.language_weights(totals, exponent)
    shares = {lang: totals[lang] * weights[lang] for lang in totals}
    assert shares["ru"] / sum(shares.values()) == pytest.approx(ru_share)


def _texts():
  english = " ".join(f"word{i} " * (40 - i % 40) for i in range(400))
  russian = " ".join(f"слово{i} " * 3 for i in range(60))
  return {"en": [english], "ru": [russian]}


def _cyrillic_tokens(vocab):
  return sum(any("\u0400" <= c <= "\u04ff" for c in token) for token in vocab)


def test_a_small_language_gains_vocabulary_when_smoothed():
  plain = multilingual_vocab.build_multilingual_vocab(_texts(), 200, 1.0)
  smoothed = multilingual_vocab.build_multilingual_vocab(_texts(), 200, 0.3)
  assert _cyrillic_tokens(smoothed) > _cyrillic_tokens(plain)
  assert smoothed[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_vocabulary_is_cased_by_default():
  vocab = multilingual_vocab.build_multilingual_vocab(
      {"de": ["Haus Haus Haus Maus Maus Maus"] * 20}, 60)
  assert "Haus" in vocab


def test_language_spec_errors_are_clear():
  assert corpus.parse_language_corpora("en=a,de=b,en=c") == {
      "en": "a,c", "de": "b"}
  with pytest.raises(ValueError, match="is not LANGUAGE=PATH"):
    corpus.parse_language_corpora("en=a,justapath")
