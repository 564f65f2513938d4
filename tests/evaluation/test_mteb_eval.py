"""`python -m cmlm eval --mteb_tasks=...`: MTEB 2 tasks by name, through
MTEB's own registry and `mteb.evaluate`, scored into the same report as the
garden's file-based tasks.

Users' tasks come from the Hugging Face Hub; here (offline) a local STS
task is put into MTEB's registry under its own name, so that the command
finds it as it finds STSBenchmark. mteb is a test dependency
(requirements-test.txt); without it these tests skip, saying why.
"""
import json
import os
import sys

import numpy as np
import pytest

from cmlm.commands import eval as eval_command
from cmlm.evaluation import sts_readers



@pytest.fixture(scope="module", name="mteb_tasks")
def mteb_tasks_module():
  """tests/cmlm/mteb_tasks.py, which imports mteb: imported by the tests that
  use it (at the module's top it cost every pytest worker seconds of
  collection); they skip without mteb."""
  pytest.importorskip("mteb", reason="mteb is a test dependency: pip "
                      "install -r requirements-test.txt")
  from tests.cmlm import mteb_tasks  # pylint: disable=g-import-not-at-top
  return mteb_tasks


def _write_sts_benchmark(directory, num_pairs=40):
  """sts-test.csv of pairs sharing 0-4 of 5 words (the gold): no two
  sentences of a pair alike, so that no two cosines tie."""
  rng = np.random.default_rng(0)
  words = ("the cat dog man woman child sat ran ate played on under a big "
           "small red old house park ball").split()
  lines = []
  for i in range(num_pairs):
    first = list(rng.choice(words, 5, replace=False))
    overlap = i % 5
    others = [w for w in words if w not in first]
    second = first[:overlap] + list(rng.choice(others, 5 - overlap,
                                               replace=False))
    lines.append(f"main-news\tnews\t2016\t{i:04d}\t{overlap:.1f}\t"
                 f"{' '.join(first)}\t{' '.join(second)}")
  os.makedirs(directory)
  path = os.path.join(directory, "sts-test.csv")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
  return path


@pytest.fixture
def local_mteb_task(tmp_path, monkeypatch, mteb_tasks):
  """A --data_dir with STS-B test pairs, and MTEB's registry holding an STS
  task of the same pairs under the local task's name: (data_dir, pairs,
  name)."""
  name = mteb_tasks.LocalSTSBenchmark.metadata.name
  data_dir = str(tmp_path / "data")
  pairs = sts_readers.read_sts_benchmark(_write_sts_benchmark(
      os.path.join(data_dir, "sts", "STSBenchmark")))

  class RegisteredLocalSTS(mteb_tasks.LocalSTSBenchmark):
    def __init__(self, **kwargs):
      super().__init__(pairs, **kwargs)

  # `mteb.get_task` looks names up in its module's registry (the module is
  # shadowed by the function of the same name in `mteb`'s namespace).
  registry = sys.modules["mteb.get_tasks"]._TASKS_REGISTRY  # pylint: disable=protected-access
  monkeypatch.setitem(registry, name, RegisteredLocalSTS)
  return data_dir, pairs, name


@pytest.mark.slow
def test_mteb_tasks_are_scored_beside_the_file_tasks(tiny, local_mteb_task,
                                                     mteb_tasks, tmp_path):
  data_dir, pairs, local_task = local_mteb_task
  report_dir = tmp_path / "report"
  eval_command.main([
      f"--model={tiny.result.export_dir}", "--tasks=sts-b",
      f"--data_dir={data_dir}", f"--mteb_tasks={local_task}",
      "--batch_size=16", f"--report_dir={report_dir}"])
  report = json.loads((report_dir / "report.json").read_text())
  assert list(report["tasks"]) == ["sts-b", local_task]
  ours, theirs = report["tasks"]["sts-b"], report["tasks"][local_task]
  assert theirs["headline"] == "cosine_spearman"
  assert theirs["main_score"] == theirs["cosine_spearman"]
  recorded = theirs["mteb"]["scores"][mteb_tasks.SPLIT][0]["main_score"]
  assert theirs["main_score"] == pytest.approx(100 * recorded)
  assert theirs["mteb"]["mteb_version"] == sys.modules["mteb"].__version__
  assert theirs["mteb"]["type"] == "STS"  # the model card's task type
  # MTEB's cosine Spearman of the same pairs, embedded by the same model
  # (loaded once), is the garden's own STS figure.
  assert ours["num_pairs"] == len(pairs)
  assert theirs["main_score"] == pytest.approx(ours["spearman"], abs=1e-3)
  assert abs(ours["spearman"]) > 1  # the toy pairs are not all ties
  markdown = (report_dir / "report.md").read_text()
  assert (f"| {local_task} |  | cosine_spearman | "
          f"{theirs['main_score']:.2f} |") in markdown


def test_an_unknown_mteb_task_is_one_line_before_the_model_loads(
    tmp_path, mteb_tasks):  # pylint: disable=unused-argument  (skips without mteb)
  (tmp_path / "not_a_model").mkdir()  # its loading would fail: never tried
  with pytest.raises(ValueError) as error:
    eval_command.main([f"--model={tmp_path / 'not_a_model'}",
                       "--mteb_tasks=STSBenchmrk",
                       f"--report_dir={tmp_path / 'report'}"])
  message = str(error.value)
  assert message.startswith("Unknown MTEB task 'STSBenchmrk' in "
                            "--mteb_tasks; did you mean 'STSBenchmark'?")
  # Where a user of the command line finds the names (not a Python call).
  assert "`mteb available-tasks` (MTEB's own command" in message
  assert "mteb.get_tasks()" not in message
  assert "\n" not in message
  assert not (tmp_path / "report").exists()
