"""Bitext mining on FAISS (inference/bitext_mining.py,
inference/nearest_neighbours.py): the exact index agrees with the numpy
reference of evaluation/mining.py, each candidate mode is LASER's, shards
and memory maps change nothing, and the approximate indexes find the exact
neighbours of clustered data."""
import numpy as np
import pytest

from cmlm.evaluation import mining
from cmlm.inference import bitext_mining
from cmlm.inference import nearest_neighbours

IndexConfig = nearest_neighbours.IndexConfig


def planted_corpora(seed=0, pairs=120, extra=60, dim=16, noise=0.3):
  """Source and target where target row i (i < pairs) is a noisy copy of
  source row i, and the rest of each side has no partner."""
  rng = np.random.default_rng(seed)
  source = rng.normal(size=(pairs + extra, dim)).astype(np.float32)
  target = np.concatenate([
      source[:pairs] + noise * rng.normal(size=(pairs, dim)),
      rng.normal(size=(extra + 17, dim))]).astype(np.float32)
  return source, target


def clustered(seed, rows, dim=32, clusters=20, spread=0.3):
  """Rows scattered around `clusters` centres: the structure IVF and HNSW
  rely on (uniform random vectors have none)."""
  rng = np.random.default_rng(seed)
  centres = rng.normal(size=(clusters, dim))
  return (centres[rng.integers(clusters, size=rows)] +
          spread * rng.normal(size=(rows, dim))).astype(np.float32)


def test_flat_neighbourhoods_and_scores_are_the_numpy_reference_s():
  source, target = planted_corpora()
  forward, backward = bitext_mining.neighbourhoods_both_ways(
      source, target, 4, IndexConfig())
  x, y = mining.l2_normalize(source), mining.l2_normalize(target)
  np.testing.assert_allclose(forward.means, mining.neighbourhood_means(x, y),
                             rtol=1e-5)
  np.testing.assert_allclose(backward.means, mining.neighbourhood_means(y, x),
                             rtol=1e-5)
  exact_order = np.argsort(-(x @ y.T), axis=1)[:, :4]
  np.testing.assert_array_equal(forward.indices, exact_order)
  reference = mining.ratio_margin_scores(source, target)
  scores = bitext_mining.margin_scores(forward, backward.means, "ratio")
  np.testing.assert_allclose(
      scores, np.take_along_axis(reference, forward.indices, axis=1),
      rtol=1e-5)


def test_max_mode_mines_the_reference_s_pairs_and_scores():
  source, target = planted_corpora(seed=1)
  pairs = bitext_mining.mine(source, target, k=4, mode="max")["pairs"]
  reference = mining.mine_candidates(source, target, 4)
  assert [(i, j) for i, j, _ in pairs.as_tuples()] == [
      (i, j) for i, j, _ in reference]
  np.testing.assert_allclose(pairs.scores, [s for _, _, s in reference],
                             rtol=1e-5)


def _pairs(source, target, mode, margin="ratio", threshold=None):
  result = bitext_mining.mine(source, target, k=4, mode=mode, margin=margin,
                              threshold=threshold)["pairs"]
  return {(i, j): s for i, j, s in result.as_tuples()}


def test_each_mode_is_laser_s_definition():
  source, target = planted_corpora(seed=2)
  forward, backward = (_pairs(source, target, m) for m in
                       ("forward", "backward"))
  assert sorted(i for i, _ in forward) == list(range(len(source)))
  assert sorted(j for _, j in backward) == list(range(len(target)))
  reference = mining.ratio_margin_scores(source, target)
  for (i, j), score in forward.items():  # the best of i's k candidates
    nearest = np.argsort(-(mining.l2_normalize(source[i:i + 1]) @
                           mining.l2_normalize(target).T)[0])[:4]
    assert j in nearest and score == pytest.approx(reference[i, nearest].max(),
                                                   rel=1e-5)
  intersection = _pairs(source, target, "intersection")
  assert set(intersection) == set(forward) & set(backward)
  assert len(intersection) < len(forward)  # the unpartnered rows disagree
  mined = _pairs(source, target, "max")
  assert set(mined) <= set(forward) | set(backward)
  assert len({i for i, _ in mined}) == len({j for _, j in mined}) == len(mined)
  for (i, j), score in {**forward, **backward}.items():  # greedy, best first
    if (i, j) not in mined:
      assert any(s >= score for (a, b), s in mined.items() if a == i or b == j)


def test_threshold_keeps_exactly_the_pairs_scoring_at_least_it():
  source, target = planted_corpora(seed=3)
  everything = _pairs(source, target, "max")
  threshold = float(np.median(list(everything.values())))
  kept = _pairs(source, target, "max", threshold=threshold)
  assert kept == {p: s for p, s in everything.items() if s >= threshold}
  assert 0 < len(kept) < len(everything)


def test_distance_margin_subtracts_the_neighbourhood_mean():
  source, target = planted_corpora(seed=4)
  forward, backward = bitext_mining.neighbourhoods_both_ways(
      source, target, 4, IndexConfig())
  ratio = bitext_mining.margin_scores(forward, backward.means, "ratio")
  distance = bitext_mining.margin_scores(forward, backward.means, "distance")
  mean = forward.similarities / ratio
  np.testing.assert_allclose(distance, forward.similarities - mean, atol=1e-5)


@pytest.mark.parametrize("query_shard_size,key_shard_size",
                         [(7, None), (None, 3), (10, 25), (1, 1)])
def test_sharded_search_equals_one_search(query_shard_size, key_shard_size):
  source, target = planted_corpora(seed=5)
  whole = nearest_neighbours.search(source, target, 4, query_shard_size=None)
  sharded = nearest_neighbours.search(source, target, 4,
                                      query_shard_size=query_shard_size,
                                      key_shard_size=key_shard_size)
  np.testing.assert_array_equal(sharded[1], whole[1])
  np.testing.assert_allclose(sharded[0], whole[0], rtol=1e-6)
  mined = bitext_mining.mine(source, target, query_shard_size=query_shard_size,
                             key_shard_size=key_shard_size)["pairs"]
  assert mined.as_tuples() == bitext_mining.mine(source, target)[
      "pairs"].as_tuples()


def test_memory_mapped_embeddings_mine_like_arrays(tmp_path):
  source, target = planted_corpora(seed=6)
  np.save(tmp_path / "source.npy", source.astype(np.float16))
  np.save(tmp_path / "target.npy", target.astype(np.float16))
  mapped = [nearest_neighbours.read_embeddings(str(tmp_path / f"{side}.npy"),
                                               "--x")
            for side in ("source", "target")]
  assert all(isinstance(m, np.memmap) for m in mapped)
  from_disk = bitext_mining.mine(*mapped, query_shard_size=50)["pairs"]
  in_memory = bitext_mining.mine(source.astype(np.float16),
                                 target.astype(np.float16))["pairs"]
  assert from_disk.as_tuples() == in_memory.as_tuples()


@pytest.mark.parametrize("config", [IndexConfig("ivf", nlist=20, nprobe=4),
                                    IndexConfig("hnsw", hnsw_m=16)])
def test_approximate_indexes_find_the_exact_neighbours_of_clustered_data(
    config):
  source, target = clustered(7, 3000), clustered(8, 3000)
  result = bitext_mining.mine(source, target, config=config,
                              recall_sample=300)
  recall = result["recall"]
  assert recall["sample_size"] == 300 and recall["k"] == 4
  assert recall["recall_at_k"] >= 0.9 and recall["top1_agreement"] >= 0.9
  assert bitext_mining.mine(source, target)["recall"] is None  # exact


def test_ivf_k_means_trains_on_at_most_the_configured_sample_of_keys():
  keys = nearest_neighbours.unit_rows(clustered(12, 2000))
  for sample, per_cell in ((None, 256), (500, 50), (100, 39)):
    config = IndexConfig("ivf", nlist=10) if sample is None else IndexConfig(
        "ivf", nlist=10, train_sample=sample)
    index = nearest_neighbours.build_index(keys, config)
    # FAISS's 256 a cell by default; the sample split over the cells, but
    # never under the 39 a cell FAISS warns below.
    assert index.cp.max_points_per_centroid == per_cell
    assert index.is_trained and index.ntotal == 2000  # every key indexed
  million = IndexConfig("ivf")
  assert nearest_neighbours.train_points_per_cell(4000, million) == 65


def test_recall_counts_only_the_exact_neighbours_found():
  source, target = clustered(9, 200), clustered(10, 300)
  _, exact = nearest_neighbours.search(source, target, 4)
  wrong = exact.copy()
  wrong[:, 2:] = -1  # half of each neighbourhood missed
  wrong[:100, 0] = exact[:100, 1]  # top-1 wrong for half the queries
  recall = nearest_neighbours.recall_against_exact(source, target, wrong, 4,
                                                   sample_size=200)
  assert recall["recall_at_k"] == pytest.approx(0.5 - 0.25 * 0.5)
  assert recall["top1_agreement"] == pytest.approx(0.5)


def test_merge_keeps_each_row_s_k_best_and_drops_padding():
  similarities = np.array([[0.9, 0.2]], dtype=np.float32)
  more = np.array([[0.5, -np.inf]], dtype=np.float32)
  merged = nearest_neighbours.merge_top_k(
      similarities, np.array([[3, 1]]), more, np.array([[7, -1]]), 3)
  np.testing.assert_array_equal(merged[1], [[3, 7, 1]])


def test_an_index_that_cannot_hold_the_corpus_is_refused_before_search():
  source, target = planted_corpora(seed=11)
  with pytest.raises(ValueError, match="--nlist=500 needs at least"):
    bitext_mining.mine(source, target, config=IndexConfig("ivf", nlist=500))
  with pytest.raises(ValueError, match="16 dimensions"):
    bitext_mining.mine(source, target[:, :8])


@pytest.mark.parametrize("config, line", [
    (IndexConfig("hnsw", hnsw_m=0), "--hnsw_m must be 2 or more, got 0."),
    (IndexConfig("hnsw", ef_search=0), "--ef_search must be 1 or more, got 0."),
    (IndexConfig("hnsw", ef_construction=0),
     "IndexConfig.ef_construction must be 1 or more, got 0.")])
def test_an_hnsw_setting_at_fault_is_named_alone(config, line):
  """Each by its flag (`mine` has no --ef_construction: it was named in
  every one of these)."""
  with pytest.raises(ValueError) as raised:
    nearest_neighbours.check_index(config, 30)
  assert str(raised.value) == line
