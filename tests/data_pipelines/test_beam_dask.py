"""`prepare`'s Beam jobs on a Dask cluster (Beam's DaskRunner over
dask.distributed, data_pipelines/beam_runners.py): the DirectRunner's bytes,
counts and manifest, the work spread over both workers, and a worker killed
in the middle of the job.

One `distributed.LocalCluster` of two worker processes on 127.0.0.1 serves
the module. A worker is caught mid-job by a named pipe among the inputs:
reading it blocks until the test writes its text, so the test knows which
worker process is inside the job when it kills it.
"""
import collections
import json
import os
import signal
import threading
import time

import pytest

beam = pytest.importorskip(
    'apache_beam', reason='Apache Beam is an extra: pip install -r '
    'requirements-beam.txt (make test installs it)')
distributed = pytest.importorskip(
    'distributed', reason='dask and distributed are in the Beam extra: pip '
    'install -r requirements-beam.txt')

# pylint: disable=g-import-not-at-top,wrong-import-position
from cmlm.data_pipelines import atomic_file
from cmlm.data_pipelines import beam_bitext
from cmlm.data_pipelines import beam_pairs
from cmlm.data_pipelines import beam_runners
from cmlm.data_pipelines import pair_tfrecords
from cmlm.data_pipelines import tokenization
from tests.data_pipelines import data_helpers as helpers
from tests.data_pipelines.test_beam_pairs import file_bytes
from tests.data_pipelines.test_beam_pairs import IN_PROCESS
from tests.data_pipelines.test_beam_pairs import read_records
from tests.data_pipelines.test_beam_pairs import write_bad_corpus


@pytest.fixture(scope='module')
def cluster():
  """(the scheduler's address, a client of our own) for the module; Dask's
  scratch space removed with it, as `local_dask_cluster` does."""
  with atomic_file.private_temporary_directory('cmlm-dask'):
    local = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, host='127.0.0.1',
        dashboard_address=None)
    client = distributed.Client(local, set_as_default=False)
    try:
      yield local.scheduler_address, client
    finally:
      client.close()
      local.close()


def on_dask(address):
  return ['--runner=DaskRunner', f'--dask_client_address={address}']


def prepare(input_spec, prefix, args, **config):
  config.setdefault('pair_unit', 'sentence')
  config.setdefault('num_shards', 3)
  return beam_pairs.prepare_pairs(str(input_spec), str(prefix),
                                  beam_pairs.PairsConfig(**config), args,
                                  stream=open(os.devnull, 'w'))


def manifest(result):
  with open(result.manifest_path, encoding='utf-8') as f:
    return json.load(f)


def test_dask_args_name_the_runner_and_give_a_partition_per_input():
  assert beam_runners.dask_args(['--runner=DaskRunner'], 7) == [
      f'--runner={beam_runners.DASK_RUNNER}', '--dask_npartitions=7']
  many = beam_runners.dask_args(['--runner=DaskRunner'], 10**6)
  assert many[-1] == f'--dask_npartitions={beam_runners.MAX_DASK_PARTITIONS}'
  # The user's partitioning wins; other runners' options pass as they are.
  assert beam_runners.dask_args(
      ['--runner=DaskRunner', '--dask_partition_size=5'], 7)[-1] == (
          '--dask_partition_size=5')
  assert beam_runners.dask_args(IN_PROCESS, 7) == IN_PROCESS
  assert beam_runners.dask_scheduler_given(['--dask_scheduler_file=s.json'])
  assert not beam_runners.dask_scheduler_given(['--runner=DaskRunner'])


def test_an_unreachable_scheduler_is_one_sentence_before_the_job(tmp_path):
  text = helpers.write_numbered_corpus(tmp_path / 'corpus', 4)
  with pytest.raises(ValueError, match='Cannot reach the Dask scheduler '
                     'tcp://127.0.0.1:9'):
    prepare(text, tmp_path / 'out' / 'p', on_dask('tcp://127.0.0.1:9') + [
        '--dask_connection_timeout=1'])
  assert not (tmp_path / 'out').exists() or not os.listdir(tmp_path / 'out')


@pytest.mark.slow
def test_pairs_on_dask_are_the_direct_runners_bytes_counts_and_manifest(
    tmp_path, cluster):
  address, client = cluster
  vocab = helpers.write_tiny_vocab(tmp_path)
  good = helpers.write_numbered_corpus(tmp_path / 'corpus', 60, num_files=4)
  tokenizing = tokenization.TokenizationConfig(vocab_file=vocab, seq_length=16)
  config = dict(pair_unit='sequence', tokenization_config=tokenizing, seed=7)
  with distributed.get_task_stream(client) as tasks:
    dask = prepare(good, tmp_path / 'dask' / 'p', on_dask(address), **config)
  direct = prepare(good, tmp_path / 'direct' / 'p', IN_PROCESS, **config)
  one_process, stats = pair_tfrecords.write_pair_tfrecords(
      good, str(tmp_path / 'one' / 'p'), 3, pair_unit='sequence',
      tokenization_config=tokenizing, seed=7)
  records = read_records(dask.shard_paths)
  assert len(records) == len(set(records)) == stats.pairs > 50
  assert collections.Counter(records) == collections.Counter(
      read_records(one_process))
  assert file_bytes(dask.shard_paths) == file_bytes(direct.shard_paths)
  assert manifest(dask) == manifest(direct)
  assert dask.counts == direct.counts
  # One partition per file: the job ran on both worker processes.
  assert len({task['worker'] for task in tasks.data}) == 2

  # Bad files are skipped and counted on Dask as on the DirectRunner.
  spec = (f'en={write_bad_corpus(tmp_path / "bad")},'
          f'en={tmp_path / "bad" / "bad"},de={tmp_path / "bad" / "nothing"}')
  bad_dask = prepare(spec, tmp_path / 'bad_dask' / 'p', on_dask(address))
  bad_direct = prepare(spec, tmp_path / 'bad_direct' / 'p', IN_PROCESS)
  assert bad_dask.counts == bad_direct.counts
  assert bad_dask.counts.get('files_binary', 'en') == 1
  assert bad_dask.counts.get('files_unreadable', 'en') == 1
  assert bad_dask.counts.get('files_empty', 'de') == 1
  assert file_bytes(bad_dask.shard_paths) == file_bytes(bad_direct.shard_paths)


@pytest.mark.slow
def test_bitext_on_dask_is_the_direct_runners(tmp_path, cluster):
  address, _ = cluster
  for name, rows in (('a', 30), ('b', 20)):
    (tmp_path / f'{name}.tsv').write_text(''.join(
        f'Source {name} {i}.\tZiel {name} {i}.\n' for i in range(rows))
        + 'no tab here\n', encoding='utf-8')
  spec = f'en-de={tmp_path}/a.tsv,en-de={tmp_path}/b.tsv'
  results = [beam_bitext.prepare_bitext(spec, str(tmp_path / out / 'p'), 3, 1,
                                        args, stream=open(os.devnull, 'w'))
             for out, args in (('dask', on_dask(address)),
                               ('direct', IN_PROCESS))]
  dask, direct = results
  assert file_bytes(dask.shard_paths) == file_bytes(direct.shard_paths)
  assert manifest(dask) == manifest(direct)
  assert dask.counts == direct.counts
  assert dask.pairs_by_language == {'en-de': 50}
  assert dask.counts.get('rows_malformed') == 2


def _running(pid):
  """Whether `pid` is a process not yet dead (a zombie has closed its
  files)."""
  try:
    with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
      return f.read().rsplit(')', 1)[1].split()[0] not in ('Z', 'X')
  except OSError:
    return False


class _PipeFeeder:
  """Feeds a named pipe to the job: waits for a worker to open it, SIGKILLs
  that worker process, then gives `text` to every later reader: the task
  run again elsewhere, and again whenever Dask recomputes a result the dead
  worker held, as it would read a file.

  A reader never waits on it forever: readers are served until the test
  leaves the `with` block, however late Dask runs the task again; if the
  feeder fails (`error`), it still serves them, so the job ends and the
  test fails on `error` instead of hanging; a reader that closes the pipe
  unread (a probe of the file) is passed over; on leaving, a reader still
  blocked opening the pipe gets its end of file."""

  def __init__(self, fifo, text, client):
    self._fifo, self._text, self._client = str(fifo), text, client
    self.killed, self.served, self.error = [], 0, None
    self._done = threading.Event()
    self._thread = threading.Thread(target=self._run, daemon=True)

  def __enter__(self):
    self._thread.start()
    return self

  def __exit__(self, *exc):
    self._done.set()
    self._thread.join(timeout=30)
    self._release_waiting_reader()

  def _release_waiting_reader(self):
    """A reader blocked in open() gets the write end, closed at once: it
    reads an end of file rather than waiting for a writer forever."""
    try:
      os.close(os.open(self._fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # ENXIO: nobody is waiting
      pass

  def _open_when_read(self):
    """The write end, once a reader holds the pipe open (None once the test
    is done with the pipe)."""
    while not self._done.is_set():
      try:
        return os.open(self._fifo, os.O_WRONLY | os.O_NONBLOCK)
      except OSError:  # ENXIO: no reader yet
        time.sleep(0.02)
    return None

  def _readers(self):
    """The processes that hold the pipe open, this one (the writer) aside."""
    readers = []
    for pid in (entry for entry in os.listdir('/proc')
                if entry.isdigit() and int(entry) != os.getpid()):
      try:
        if any(os.readlink(f'/proc/{pid}/fd/{fd}') == self._fifo
               for fd in os.listdir(f'/proc/{pid}/fd')):
          readers.append(int(pid))
      except OSError:  # gone, or a file descriptor closed meanwhile
        continue
    return readers

  def _readers_now_open(self):
    """The readers of a pipe just opened for writing (a reader's end of the
    pipe lands in its process a moment after the open)."""
    deadline = time.monotonic() + 10
    while not (readers := self._readers()) and time.monotonic() < deadline:
      time.sleep(0.005)
    return readers

  def _kill_the_first_reader(self):
    fd = self._open_when_read()
    if fd is None:
      return
    try:
      pid, = self._readers_now_open()
      assert pid in self._client.run(os.getpid).values()  # a Dask worker
      os.kill(pid, signal.SIGKILL)
      self.killed.append(pid)
    finally:
      os.close(fd)
    while _running(pid):  # its files close as it dies, not at once
      time.sleep(0.01)

  def _serve_one_reader(self):
    """Gives the text to the next reader; False once the test is done."""
    fd = self._open_when_read()
    if fd is None:
      return False
    try:
      readers = self._readers_now_open()
      os.set_blocking(fd, True)
      os.write(fd, self._text.encode('utf-8'))
    except BrokenPipeError:  # the reader closed it unread (a probe): next
      return True
    finally:
      os.close(fd)
    self.served += 1
    # The next writer must meet a new reader, not this one still reading
    # (it would read the text twice).
    while set(readers) & set(self._readers()) and not self._done.is_set():
      time.sleep(0.01)
    return True

  def _run(self):
    try:
      self._kill_the_first_reader()
    except Exception as error:  # pylint: disable=broad-except
      self.error = error
    while True:
      try:
        if not self._serve_one_reader():
          return
      except Exception as error:  # pylint: disable=broad-except
        self.error = self.error or error


# Named pipes and /proc: the worker-kill tests need Linux.
linux_only = pytest.mark.skipif(not os.path.isdir('/proc/self/fd'),
                                reason='needs /proc and named pipes (Linux)')


def corpus_with_a_pipe(tmp_path):
  """(the spec with a named pipe, the same spec with a plain file of the
  pipe's text, that text)."""
  good = helpers.write_numbered_corpus(tmp_path / 'corpus', 30, num_files=3)
  text = '\n\n'.join(helpers.numbered_document(n) for n in range(100, 110))
  (tmp_path / 'pipe').mkdir()
  fifo = tmp_path / 'pipe' / 'slow.txt'
  os.mkfifo(fifo)
  (tmp_path / 'plain').mkdir()
  (tmp_path / 'plain' / 'slow.txt').write_text(text + '\n', encoding='utf-8')
  return (f'{good},{fifo}', f'{good},{tmp_path / "plain" / "slow.txt"}',
          fifo, text + '\n')


@pytest.mark.slow
@linux_only
def test_a_worker_killed_mid_job_its_task_reruns_and_the_records_are_whole(
    tmp_path, cluster):
  """Dask reruns a dead worker's tasks elsewhere (up to its
  allowed-failures, 3): the job completes with the undisturbed records,
  none twice."""
  address, client = cluster
  piped, plain, fifo, text = corpus_with_a_pipe(tmp_path)
  undisturbed = prepare(plain, tmp_path / 'undisturbed' / 'p', IN_PROCESS)
  with _PipeFeeder(fifo, text, client) as feeder:
    result = prepare(piped, tmp_path / 'out' / 'p', on_dask(address))
  assert feeder.error is None and len(feeder.killed) == 1
  assert feeder.served >= 1  # the killed worker's task ran again
  records = read_records(result.shard_paths)
  assert len(records) == len(set(records)) == undisturbed.pairs == 80
  assert file_bytes(result.shard_paths) == file_bytes(undisturbed.shard_paths)
  assert manifest(result) == manifest(undisturbed)
  assert result.counts == undisturbed.counts
  client.wait_for_workers(2, timeout=60)


@pytest.mark.slow
@linux_only
def test_a_job_whose_worker_dies_past_allowed_failures_publishes_nothing(
    tmp_path, cluster):
  """With the scheduler's allowed-failures at 0, one dead worker fails its
  task: the job stops with one line and nothing is published."""
  address, client = cluster

  def allow(dask_scheduler, failures):
    previous = dask_scheduler.allowed_failures
    dask_scheduler.allowed_failures = failures
    return previous
  piped, _, fifo, text = corpus_with_a_pipe(tmp_path)
  previous = client.run_on_scheduler(allow, failures=0)
  try:
    with _PipeFeeder(fifo, text, client) as feeder:
      with pytest.raises(beam_runners.JobFailed) as failed:
        prepare(piped, tmp_path / 'out' / 'p', on_dask(address))
  finally:
    client.run_on_scheduler(allow, failures=previous)
  assert feeder.error is None and len(feeder.killed) == 1
  message = str(failed.value)
  assert '\n' not in message
  assert message.startswith('The cluster lost the job (KilledWorker: ')
  assert message.endswith('; nothing was published.')
  assert not (tmp_path / 'out').exists()  # nor the directory made for it
  client.wait_for_workers(2, timeout=60)
