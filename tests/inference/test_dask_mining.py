"""Mining's search on a dask.distributed LocalCluster (inference/dask_mining.py):
the same pairs as one process, and the same again when a worker is killed
in the middle of a shard."""
import os

import numpy as np
import pytest

from cmlm.inference import bitext_mining
from cmlm.inference import dask_mining
from cmlm.inference import nearest_neighbours

pytest.importorskip("dask.distributed", reason="dask is in "
                    "requirements-beam.txt")
KILL_MARKER = "CMLM_TEST_KILL_MARKER"


def search_shard_killing_once(marker, *args):
  """`dask_mining.search_shard`, but the first task to run kills its worker
  process (as an out-of-memory kill would) after leaving `marker`."""
  if not os.path.exists(marker):
    with open(marker, "w", encoding="utf-8") as f:
      f.write(str(os.getpid()))
    os._exit(1)  # pylint: disable=protected-access
  return dask_mining.search_shard(*args)


@pytest.fixture(scope="module")
def client():
  with dask_mining.local_client(2) as dask_client:
    yield dask_client


@pytest.fixture
def mapped(tmp_path):
  rng = np.random.default_rng(0)
  source = rng.normal(size=(150, 16)).astype(np.float32)
  target = np.concatenate([source[:100] + 0.3 * rng.normal(size=(100, 16)),
                           rng.normal(size=(70, 16))]).astype(np.float32)
  np.save(tmp_path / "source.npy", source)
  np.save(tmp_path / "target.npy", target)
  return (np.load(tmp_path / "source.npy", mmap_mode="r"),
          np.load(tmp_path / "target.npy", mmap_mode="r"))


@pytest.mark.slow
@pytest.mark.parametrize("config", [nearest_neighbours.IndexConfig(),
                                    nearest_neighbours.IndexConfig(
                                        "ivf", nlist=2, nprobe=1)])
def test_the_cluster_mines_the_pairs_of_one_process(client, mapped, config):
  alone = bitext_mining.mine(*mapped, config=config, query_shard_size=40,
                             key_shard_size=60)
  on_cluster = bitext_mining.mine(*mapped, config=config,
                                  query_shard_size=40, key_shard_size=60,
                                  client=client)
  assert on_cluster["pairs"].as_tuples() == alone["pairs"].as_tuples()


@pytest.mark.slow
def test_a_killed_worker_s_shard_runs_again_with_the_same_result(
    client, mapped, tmp_path):
  source, target = mapped
  marker = str(tmp_path / "killed")
  expected = nearest_neighbours.search(source, target, 4, query_shard_size=30)
  task = lambda *args: search_shard_killing_once(marker, *args)  # noqa: E731
  found = dask_mining.search(client, source, target, 4, query_shard_size=30,
                             task=task)
  assert os.path.exists(marker)  # a worker was killed
  np.testing.assert_array_equal(found[1], expected[1])
  np.testing.assert_allclose(found[0], expected[0], rtol=1e-6)


def test_arrays_in_memory_are_refused_before_any_search(mapped):
  source, target = mapped
  with pytest.raises(ValueError, match="memory-mapped"):
    bitext_mining.mine(np.array(source), target, client=object())


@pytest.mark.slow
def test_the_command_on_a_local_cluster_writes_the_pairs_of_one_process(
    mapped, tmp_path):
  from tests.export import export_helpers  # pylint: disable=g-import-not-at-top
  outputs = []
  for workers in ("0", "2"):
    output = tmp_path / f"pairs_{workers}.tsv"
    result = export_helpers.run_cli(
        "mine", f"--source_embeddings={tmp_path}/source.npy",
        f"--target_embeddings={tmp_path}/target.npy", f"--output={output}",
        f"--dask_workers={workers}", "--shard_size=50", "--noprogress")
    assert result.returncode == 0, result.stderr[-2000:]
    outputs.append(output.read_text())
  assert outputs[0] == outputs[1] and outputs[0].count("\n") > 100
