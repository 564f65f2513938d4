"""Mining's encoding and search on a dask.distributed LocalCluster
(inference/dask_encoding.py, inference/dask_mining.py): the same embeddings
and pairs as one process, and the same again when a worker is killed in the
middle of a shard."""
import concurrent.futures
import contextlib
import os

import numpy as np
import pytest

from cmlm.inference import bitext_mining
from cmlm.inference import dask_encoding
from cmlm.inference import dask_mining
from cmlm.inference import mine_files
from cmlm.inference import nearest_neighbours
from tests import helpers
from tests.export import export_helpers

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


def encode_shard_killing_once(marker, *args):
  """`dask_encoding.encode_shard`, killing its worker once like
  `search_shard_killing_once`."""
  if not os.path.exists(marker):
    with open(marker, "w", encoding="utf-8") as f:
      f.write(str(os.getpid()))
    os._exit(1)  # pylint: disable=protected-access
  return dask_encoding.encode_shard(*args)


def _by_pair(rows):
  """[((source, target), score)] sorted by pair: two runs' float noise may
  swap pairs whose scores are within it, so the pairs and their scores are
  compared, not the order of near-equal scores."""
  return sorted(((source, target), float(score))
                for score, source, target in rows)


@pytest.fixture(scope="module")
def client():
  with dask_mining.local_client(2) as dask_client:
    yield dask_client


@pytest.fixture
def texts(tmp_path):
  """(source.txt, target.txt, the source sentences): the target is the
  source shuffled, with two sentences of its own."""
  source = export_helpers.SENTENCES + ["the other one", "Mr. Bennet laughed",
                                       "rain on the roof"]
  order = np.random.default_rng(1).permutation(len(source))
  target = [source[i] for i in order] + ["a letter came", "tea at four"]
  for name, sentences in (("source", source), ("target", target)):
    (tmp_path / f"{name}.txt").write_text("\n".join(sentences) + "\n")
  return str(tmp_path / "source.txt"), str(tmp_path / "target.txt"), source


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


class OneCopyClient:
  """The client, scattering to one worker only (as Dask's Active Memory
  Manager leaves a broadcast, sooner or later) and writing that worker's
  address to `holder_file`."""

  def __init__(self, client, holder_file):
    self.client, self.holder_file = client, holder_file

  def scatter(self, value, broadcast, hash):  # pylint: disable=redefined-builtin
    del broadcast
    self.client.wait_for_workers(1, timeout=60)  # as Dask's scatter waits
    holder = sorted(self.client.scheduler_info()["workers"])[0]
    with open(self.holder_file, "w", encoding="utf-8") as f:
      f.write(holder)
    return self.client.scatter(value, workers=[holder], hash=hash)

  def submit(self, *args, **kwargs):
    return self.client.submit(*args, **kwargs)

  def cancel(self, future):
    self.client.cancel(future)


def search_shard_killing_the_holder(marker, holder_file, *args):
  """`dask_mining.search_shard`, but the first task to run on the worker
  holding the scattered indexes kills it, and the indexes with it."""
  from distributed import get_worker  # pylint: disable=g-import-not-at-top
  with open(holder_file, encoding="utf-8") as f:
    holder = f.read()
  if not os.path.exists(marker) and get_worker().address == holder:
    with open(marker, "w", encoding="utf-8") as f:
      f.write(holder)
    os._exit(1)  # pylint: disable=protected-access
  return dask_mining.search_shard(*args)


@pytest.mark.slow
def test_indexes_lost_with_a_worker_are_scattered_again(client, mapped,
                                                        tmp_path, capsys):
  """The worker holding the only copy of the key indexes dies: the shards
  left run on indexes built and scattered again, with the pairs of one
  process, and the command's output says so in one line."""
  source, target = mapped
  marker, holder_file = str(tmp_path / "killed"), str(tmp_path / "holder")
  expected = nearest_neighbours.search(source, target, 4, query_shard_size=30)
  task = lambda *args: search_shard_killing_the_holder(  # noqa: E731
      marker, holder_file, *args)
  found = dask_mining.search(OneCopyClient(client, holder_file), source,
                             target, 4, query_shard_size=30, task=task)
  assert os.path.exists(marker)  # the holder was killed
  np.testing.assert_array_equal(found[1], expected[1])
  np.testing.assert_allclose(found[0], expected[0], rtol=1e-6)
  said = capsys.readouterr().err.splitlines()
  assert said[-1].startswith("A worker died holding the key indexes: "
                             "building and scattering them again for the ")
  client.wait_for_workers(2, timeout=60)


def test_indexes_lost_past_the_rescatters_stop_the_search_in_one_line(
    mapped, monkeypatch, capsys):
  """The indexes lost at every scatter (each shard's future cancelled, as
  Dask cancels them): after `RESCATTERS` scatters again, the search stops
  with one sentence saying why rather than trying forever."""
  monkeypatch.setattr(dask_mining, "RESCATTERS", 1)
  client = LosingClient()
  with pytest.raises(RuntimeError) as stopped:
    dask_mining.search(client, *mapped, 4, query_shard_size=30)
  assert str(stopped.value) == (
      "The Dask cluster lost the search's key indexes 2 times (each time "
      "with a worker that died); the search stopped.")
  assert client.scatters == 2
  said = capsys.readouterr().err.splitlines()
  assert said == ["A worker died holding the key indexes: building and "
                  "scattering them again for the 5 query shards left."]


def test_arrays_in_memory_are_refused_before_any_search(mapped):
  source, target = mapped
  with pytest.raises(ValueError, match="memory-mapped"):
    bitext_mining.mine(np.array(source), target, client=object())


class InProcessClient:
  """The little of a dask.distributed Client `dask_mining.search` uses,
  running each task at once in this process; a task that raises fails the
  test (a worker would log it with its traceback)."""

  def scatter(self, value, broadcast, hash):  # pylint: disable=redefined-builtin
    del broadcast, hash
    return value

  def submit(self, task, *args, pure):
    del pure
    try:
      result = task(*args)
    except Exception as error:  # pylint: disable=broad-except
      pytest.fail(f"a task raised {error!r}: its worker would log it")
    return type("Done", (), {"result": lambda self: result})()

  def cancel(self, future):
    pass


class LosingClient(InProcessClient):
  """An in-process client whose every shard is cancelled, as Dask cancels
  the tasks of an index lost with a worker; it counts the scatters."""

  scatters = 0

  def scatter(self, value, broadcast, hash):  # pylint: disable=redefined-builtin
    self.scatters += 1
    return super().scatter(value, broadcast, hash)

  def submit(self, task, *args, pure):
    del task, args, pure

    def cancelled(_):
      raise concurrent.futures.CancelledError("already forgotten")
    return type("Cancelled", (), {"result": cancelled})()


def test_a_query_shard_with_nan_is_the_search_s_error_not_a_failed_task(
    mapped, tmp_path):
  """Raised in a task, the worker logs it with its traceback before the
  command's one line; the task returns it and the client raises it."""
  source, target = mapped
  rows = np.array(source)
  rows[57, 3] = np.nan
  np.save(tmp_path / "nan.npy", rows)
  queries = np.load(tmp_path / "nan.npy", mmap_mode="r")
  with pytest.raises(ValueError) as raised:
    dask_mining.search(InProcessClient(), queries, target, 4,
                       query_shard_size=50)
  assert str(raised.value) == (
      f"{tmp_path / 'nan.npy'} holds non-finite values (NaN or infinity), "
      "first in row 57; mine finite embeddings.")
  with pytest.raises(ValueError, match="nan.npy holds non-finite values"):
    dask_mining.search(InProcessClient(), target, queries, 4)  # as keys


def test_a_scheduler_address_that_does_not_answer_is_one_sentence(
    mapped, tmp_path):
  """Nothing listening at --dask_address was Dask's 65-line traceback,
  after its connect timeout (30 s; here shortened); a malformed address,
  Dask's sentence without the flag."""
  import dask  # pylint: disable=g-import-not-at-top
  from cmlm.commands import mine  # pylint: disable=g-import-not-at-top
  output = tmp_path / "pairs.tsv"
  args = [f"--source_embeddings={tmp_path}/source.npy",
          f"--target_embeddings={tmp_path}/target.npy",
          f"--output={output}", "--noprogress"]
  with dask.config.set({"distributed.comm.timeouts.connect": "0.2s"}):
    with pytest.raises(ValueError, match=r"^--dask_address=tcp://127\.0\.0"
                       r"\.1:1: no Dask scheduler answered \(Timed out "
                       r"trying to connect"):
      mine.main(args + ["--dask_address=tcp://127.0.0.1:1"])
  with pytest.raises(ValueError, match=r"^--dask_address=nowhere is not a "
                     r"scheduler address \(.*\); give tcp://HOST:8786\.$"):
    mine.main(args + ["--dask_address=nowhere"])
  assert not output.exists()


@pytest.mark.slow
def test_the_command_on_a_local_cluster_writes_the_pairs_of_one_process(
    mapped, tmp_path):
  """`--dask_workers=2` starts a local cluster as a user runs it: the pairs
  of one process, Dask's own lines kept out of the output and no
  dask-scratch-space left in the system's temporary directory."""
  outputs = []
  for workers in ("0", "2"):
    output = tmp_path / f"pairs_{workers}.tsv"
    result = export_helpers.run_cli(
        "mine", f"--source_embeddings={tmp_path}/source.npy",
        f"--target_embeddings={tmp_path}/target.npy", f"--output={output}",
        f"--dask_workers={workers}", "--shard_size=50", "--noprogress",
        tmpdir=tmp_path / f"system_tmp_{workers}")
    assert result.returncode == 0, result.stderr[-2000:]
    outputs.append(output.read_text())
  assert outputs[0] == outputs[1] and outputs[0].count("\n") > 100
  # Dask's INFO lines (its scheduler and nannies run in the command's
  # process) stay out of the command's output, as they do for `prepare`,
  # and so does the kill of a worker slow to exit when the cluster closes.
  assert not [line for line in result.stderr.splitlines()
              if any(dask_line in line for dask_line in (
                  "Register worker", "Scheduler at", "still alive after"))]
  assert os.listdir(tmp_path / "system_tmp_2") == []  # no dask-scratch-space


@pytest.mark.slow
def test_the_cluster_encodes_and_mines_as_one_process(client, texts,
                                                      tiny_export, tmp_path):
  from cmlm.inference import encode_files  # pylint: disable=g-import-not-at-top
  model = tiny_export.export_dir
  source_txt, target_txt, sentences = texts
  encode_files.encode_file(model, source_txt, str(tmp_path / "alone.npy"),
                           batch_size=3, show_progress=False)
  dask_encoding.encode(client, model, sentences, str(tmp_path / "dask.npy"),
                       shard_size=4, batch_size=3)
  np.testing.assert_allclose(np.load(tmp_path / "dask.npy"),
                             np.load(tmp_path / "alone.npy"), atol=1e-5)
  results = [mine_files.mine_files(
      str(tmp_path / f"pairs_{name}.tsv"), source_txt, target_txt,
      model=model, batch_size=3, show_progress=False, open_client=opener,
      encode_shard_size=4, k=2) for name, opener in (
          ("alone", None),
          ("dask", lambda: contextlib.nullcontext(client)))]
  alone, on_cluster = (
      _by_pair(zip(r["pairs"].scores, r["pairs"].source, r["pairs"].target))
      for r in results)
  assert [pair for pair, _ in on_cluster] == [pair for pair, _ in alone]
  np.testing.assert_allclose([s for _, s in on_cluster],
                             [s for _, s in alone], atol=1e-5)


@pytest.mark.slow
def test_a_killed_worker_s_sentences_are_encoded_again(client, texts,
                                                       tiny_export, tmp_path):
  model = tiny_export.export_dir
  sentences = texts[2]
  marker = str(tmp_path / "killed")
  task = lambda *args: encode_shard_killing_once(marker, *args)  # noqa: E731
  dask_encoding.encode(client, model, sentences, str(tmp_path / "killed.npy"),
                       shard_size=3, batch_size=2, task=task)
  assert os.path.exists(marker)  # a worker was killed
  expected = dask_encoding.encode_shard(model, sentences, 2)
  np.testing.assert_allclose(np.load(tmp_path / "killed.npy"), expected,
                             atol=1e-5)


@pytest.mark.slow
def test_the_command_encodes_on_a_running_cluster_as_in_one_process(
    client, texts, tiny_export, tmp_path, capsys):
  """The one-process run through the command line's `main` in this process,
  then `--dask_address` as a user runs it, on this file's running cluster
  (the local cluster `--dask_workers` starts is the test above's)."""
  source_txt, target_txt, _ = texts
  rows = []
  for cluster in ([], [f"--dask_address={client.scheduler.address}"]):
    output = tmp_path / f"pairs_{len(cluster)}.tsv"
    argv = ["mine", f"--model={tiny_export.export_dir}",
            f"--source={source_txt}", f"--target={target_txt}",
            f"--output={output}", "--k=2", "--encode_shard_size=4", *cluster]
    result = (export_helpers.run_cli(*argv) if cluster
              else helpers.run_command_here(argv, capsys))
    assert result.returncode == 0, result.stderr[-2000:]
    rows.append(_by_pair(line.split("\t")
                         for line in output.read_text().splitlines()))
  assert "on the Dask cluster" in result.stderr
  assert [pair for pair, _ in rows[0]] == [pair for pair, _ in rows[1]]
  np.testing.assert_allclose([s for _, s in rows[1]],
                             [s for _, s in rows[0]], atol=1e-5)
  assert client.scheduler_info()["workers"]  # the cluster is still up
