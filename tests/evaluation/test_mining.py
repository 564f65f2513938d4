"""Parallel mining with the ratio margin (Kiros et al. 2020, section 4.4) and
the language distribution of retrieved sentences (paper figure 2)."""
import numpy as np
import pytest

import cmlm.evaluation  # noqa: F401  (Keras 2 before TensorFlow loads)

from cmlm.evaluation import language_distribution
from cmlm.evaluation import mining
from cmlm.evaluation import multilingual_data
from cmlm.modeling.vectors import l2_normalize as normalize_rows


def _hub_corpora(n=6):
  """x_i and y_i are translations; the extra y is a hub near every x.

  cos(x_i, hub) = 0.669 > cos(x_i, y_i) = 0.644, but the hub's neighbourhood
  is close to it, so its margin is small.
  """
  eye = np.eye(2 * n + 1)
  common = eye[-1]
  x = np.stack([eye[i] + 0.9 * common for i in range(n)])
  y = np.stack([eye[i] + 1.6 * eye[n + i] + 0.9 * common for i in range(n)] +
               [common])
  return x, y, [(i, i) for i in range(n)]


def test_ratio_margin_penalises_the_hub_that_cosine_picks():
  x, y, gold = _hub_corpora()
  hub = len(y) - 1
  cosine = normalize_rows(x) @ normalize_rows(y).T
  assert (np.argmax(cosine, axis=1) == hub).all()  # plain cosine: the hub
  margin = mining.ratio_margin_scores(x, y, k=4)
  np.testing.assert_array_equal(np.argmax(margin, axis=1), np.arange(6))
  by_margin = mining.f1_optimal_threshold(mining.mine_candidates(x, y), gold)
  by_cosine = mining.f1_optimal_threshold(
      mining.mine_candidates(x, y, score="cosine"), gold)
  assert by_margin["f1"] == 100.0
  assert by_cosine["f1"] < 100.0


def test_ratio_margin_is_cosine_over_the_mean_neighbourhood_similarity():
  rng = np.random.default_rng(0)
  x, y = normalize_rows(rng.normal(size=(7, 5))), normalize_rows(
      rng.normal(size=(9, 5)))
  cosine = x @ y.T
  k = 4
  x_side = np.sort(cosine, axis=1)[:, -k:].sum(axis=1) / (2 * k)
  y_side = np.sort(cosine, axis=0)[-k:, :].sum(axis=0) / (2 * k)
  np.testing.assert_allclose(mining.ratio_margin_scores(x, y, k),
                             cosine / (x_side[:, None] + y_side[None, :]),
                             rtol=1e-5)


def test_candidates_are_one_to_one():
  x, y, _ = _hub_corpora()
  candidates = mining.mine_candidates(x, y, score="cosine")
  assert len({i for i, _, _ in candidates}) == len(candidates)
  assert len({j for _, j, _ in candidates}) == len(candidates)


def test_f1_optimal_threshold_on_a_toy_set():
  candidates = [(0, 0, 0.9), (1, 1, 0.8), (2, 5, 0.7), (3, 3, 0.6),
                (4, 9, 0.5)]
  gold = [(0, 0), (1, 1), (3, 3), (7, 7)]
  best = mining.f1_optimal_threshold(candidates, gold)
  # top-4: 3 right of 4 mined, 3 of 4 gold found.
  assert best["threshold"] == 0.6 and best["num_mined"] == 4
  assert best["precision"] == pytest.approx(75)
  assert best["recall"] == pytest.approx(75)
  assert best["f1"] == pytest.approx(75)
  at = mining.scores_at_threshold(candidates, gold, 0.8)
  assert at["f1"] == pytest.approx(100 * 2 * 1 * 0.5 / 1.5)


def test_tied_candidates_are_kept_or_dropped_together():
  candidates = [(0, 0, 0.9), (1, 1, 0.5), (2, 7, 0.5)]
  best = mining.f1_optimal_threshold(candidates, [(0, 0)])
  assert best["num_mined"] == 1 and best["f1"] == 100.0
  best = mining.f1_optimal_threshold(candidates, [(0, 0), (1, 1)])
  assert best["num_mined"] == 3  # 0.5 cannot keep (1, 1) without (2, 7)


def test_mining_test_from_bitext_keeps_only_the_gold_translations(tmp_path):
  source = [f"quelle {i}" for i in range(100)]
  target = [f"target {i}" for i in range(100)]
  paths = multilingual_data.write_mining_test(
      source, target, str(tmp_path), "xx", "en", num_gold=30, num_unpaired=20)
  source_corpus, target_corpus, gold = multilingual_data.read_mining_test(
      *paths)
  assert len(source_corpus.sentences) == len(target_corpus.sentences) == 50
  assert len(gold) == 30
  for i, j in gold:
    assert (source_corpus.sentences[i].split()[1] ==
            target_corpus.sentences[j].split()[1])
  numbers = ({s.split()[1] for s in source_corpus.sentences} &
             {t.split()[1] for t in target_corpus.sentences})
  assert len(numbers) == 30  # the unpaired sentences' translations are absent
  with pytest.raises(ValueError, match="needs 70"):
    multilingual_data.write_mining_test(source[:60], target[:60],
                                        str(tmp_path), "xx", "en", 30, 20)


def _pool_encoder(language_offset):
  """Meaning i is vector i; each language adds its own offset direction."""
  languages = ["en", "de", "fr"]
  rng = np.random.default_rng(0)
  meanings = rng.normal(size=(40, 16))
  table = {}
  for number, language in enumerate(languages):
    offset = np.zeros(16)
    offset[number] = language_offset
    for i, meaning in enumerate(meanings):
      table[f"{language} {i}"] = meaning + offset
  pool = {language: [f"{language} {i}" for i in range(40)]
          for language in languages}
  def encode(sentences, batch_size=256):
    del batch_size
    return np.array([table[s] for s in sentences])
  return encode, pool


def test_language_distribution_shows_self_language_bias_and_its_removal(
    tmp_path):
  agnostic, pool = _pool_encoder(language_offset=0.0)
  result = language_distribution.evaluate_language_distribution(
      agnostic, pool, str(tmp_path / "agnostic.png"), k=2)
  # The two neighbours are the translations: none in the query's language.
  assert result["self_language_share"] == 0.0
  assert result["distributions"]["cosine"]["en"] == {"en": 0.0, "de": 50.0,
                                                    "fr": 50.0}
  biased, pool = _pool_encoder(language_offset=30.0)
  result = language_distribution.evaluate_language_distribution(
      biased, pool, str(tmp_path / "biased.png"), k=2)
  assert result["self_language_share"] == 100.0
  assert result["self_language_share_pcr"] == 0.0  # PCR removes the offset
  with open(result["plot"], "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
