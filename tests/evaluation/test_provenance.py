"""What an eval report records to be reproduced (evaluation/provenance.py)."""
import hashlib
import json

import cmlm.evaluation  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.evaluation import provenance
from cmlm.evaluation import runner
from cmlm.evaluation.task_data import EvalOptions
from tests.evaluation import test_runner


def test_report_records_versions_command_checksums_subsample_main_score(
    tmp_path):
  data_dir = test_runner._senteval_layout(tmp_path / "data")  # pylint: disable=protected-access
  options = EvalOptions(model="toy", report_dir=str(tmp_path / "report"),
                        max_examples=20, show_progress=False)
  report = runner.run_evaluation(
      "toy", ["sts-b", "cr"], options, data_dir,
      encoder=test_runner.bag_of_words_encoder,
      command_line="python -m cmlm eval --model=toy --tasks=sts-b,cr")
  with open(tmp_path / "report" / "report.json") as f:
    saved = json.load(f)
  assert saved == report
  assert report["command_line"].endswith("--tasks=sts-b,cr")
  libraries = report["environment"]["libraries"]
  assert libraries["tensorflow"].startswith("2.")
  assert report["environment"]["python"].count(".") == 2
  assert report["subsample"] == {"max_examples_per_split": 20, "seed": 0}
  files = [path for task in report["tasks"].values() for path in task["data"]]
  assert sorted(report["data_files"]) == sorted(files) and len(files) == 3
  for path, entry in report["data_files"].items():
    with open(path, "rb") as f:
      data = f.read()
    assert entry == {"sha256": hashlib.sha256(data).hexdigest(),
                     "bytes": len(data)}
  for task in report["tasks"].values():
    assert task["main_score"] == task[task["headline"]]
  markdown = (tmp_path / "report" / "report.md").read_text()
  assert "- command: `python -m cmlm eval --model=toy" in markdown
  assert "a subsample of at most 20 per split" in markdown


def test_a_full_run_says_so():
  assert provenance.subsample(None) is None
  assert provenance.command_line(["a b", "c"]) == "'a b' c"
