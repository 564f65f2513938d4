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
                     "--skip=300/hnsw", "--exact_sample=40",
                     f"--work_dir={tmp_path}",
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
  with pytest.raises(SystemExit):
    benchmark.main(["--sizes=300", "--exact_sample=-1",
                    f"--output={tmp_path / 'x.json'}"])


def test_a_skipped_exact_search_is_timed_on_a_sample_and_projected(
    benchmark, tmp_path):
  """Exact search is linear in its queries: 50 of 400 rows searched
  exactly, the whole search both ways is projected as 2 x 400 x 400 dot
  products at the sample's rate."""
  output = tmp_path / "scaling.json"
  benchmark.main(["--sizes=400", "--indexes=flat,ivf", "--dim=8",
                  "--clusters=10", "--recall_sample=20", "--k=2",
                  "--skip=400/flat", "--exact_sample=50",
                  f"--work_dir={tmp_path}", f"--output={output}"])
  report = json.loads(output.read_text())
  assert set(report["results"]) == {"400/ivf"}
  skipped = report["skipped"]["400/flat"]
  sample = skipped["sampled_exact"]
  assert sample["queries"] == 50 and sample["search_seconds"] > 0
  rate = 50 * 400 / sample["search_seconds"]
  assert sample["dot_products_per_second"] == pytest.approx(rate, rel=0.02)
  assert sample["projected_search_seconds_both_ways"] == pytest.approx(
      skipped["dot_products_both_ways"] / rate, rel=0.02, abs=1)
  # A skipped approximate cell has no exact sample; 0 turns it off.
  benchmark.main(["--sizes=400", "--indexes=flat", "--dim=8",
                  "--clusters=10", "--skip=400/flat", "--exact_sample=0",
                  f"--work_dir={tmp_path}", f"--output={output}"])
  assert json.loads(output.read_text())["skipped"] == {
      "400/flat": {"dot_products_both_ways": 2 * 400 ** 2}}
