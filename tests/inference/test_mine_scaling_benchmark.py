"""benchmarks/mine_scaling.py on a few hundred vectors: every stage is timed
for each index it runs, the approximate index reports its recall, and a
cell named by --skip is left out and listed with its cost."""
import importlib.util
import json
import os

import pytest

from tests import helpers

pytest.importorskip("faiss", reason="faiss-cpu is in requirements.txt")


@pytest.fixture
def benchmark(monkeypatch):
  """The script as a module, its folder on the path as when it runs."""
  folder = os.path.join(helpers.REPO_ROOT, "benchmarks")
  monkeypatch.syspath_prepend(folder)
  path = os.path.join(folder, "mine_scaling.py")
  spec = importlib.util.spec_from_file_location("mine_scaling", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_the_cells_run_are_timed_and_the_skipped_listed(benchmark, tmp_path):
  output = tmp_path / "scaling.json"
  benchmark.main(["--sizes=300", "--indexes=flat,ivf,hnsw", "--dim=8",
                     "--clusters=10", "--recall_sample=50", "--k=2",
                     "--skip=300/hnsw", f"--work_dir={tmp_path}",
                     f"--output={output}"])
  report = json.loads(output.read_text())
  assert set(report["results"]) == {"300/flat", "300/ivf"}
  assert report["complete"] and report["cells"] == [
      "300/flat", "300/ivf", "300/hnsw"]
  assert report["skipped"] == {"300/hnsw": {"dot_products_both_ways":
                                            2 * 300 ** 2}}
  for cell in report["results"].values():
    assert set(cell["stages"]) == {"index", "search", "margin"}
    assert 0 < cell["pairs"] <= 300
  recall = report["results"]["300/ivf"]["recall"]
  assert 0.0 <= recall["recall_at_k"] <= 1.0
  assert "recall" not in report["results"]["300/flat"]
  assert report["command"] and report["commit"]


def test_a_skip_outside_the_cells_is_refused(benchmark, tmp_path):
  with pytest.raises(SystemExit):
    benchmark.main(["--sizes=300", "--indexes=flat", "--skip=1000/flat",
                       f"--output={tmp_path / 'x.json'}"])
