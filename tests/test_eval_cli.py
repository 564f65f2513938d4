"""`python -m cmlm eval` end to end on a tiny trained run and its export."""
import json
import os

import numpy as np
import pytest

import evaluation  # noqa: F401  (Keras 2 before TensorFlow loads)

from evaluation import encoders
from evaluation.runner import DEFAULT_DATA_DIR
from tests import test_export_helpers as export_helpers

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  return export_helpers.tiny_export(tmp_path_factory)


@pytest.mark.skipif(not os.path.isdir(DEFAULT_DATA_DIR),
                    reason="../shared/data/eval is absent")
def test_cli_eval_of_a_trained_run_writes_the_report(tiny, tmp_path):
  report_dir = tmp_path / "report"
  completed = export_helpers.run_cli(
      "eval", f"--model={tiny.model_dir}", "--tasks=sts-b,cr",
      "--max_examples=120", "--batch_size=64", f"--report_dir={report_dir}")
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "[1/2] sts-b (table 2)" in completed.stdout
  assert "sent/s" in completed.stderr  # encoding progress
  report = json.loads((report_dir / "report.json").read_text())
  assert report["model"] == tiny.model_dir
  sts_b, cr = report["tasks"]["sts-b"], report["tasks"]["cr"]
  assert sts_b["num_pairs"] == 120 and -100 <= sts_b["spearman"] <= 100
  assert cr["num_examples"] == 120 and 0 <= cr["accuracy"] <= 100
  assert cr["folds"] == 10
  assert sts_b["data"] == [os.path.join(DEFAULT_DATA_DIR, "sts",
                                        "STSBenchmark", "sts-dev.csv")]
  markdown = (report_dir / "report.md").read_text()
  assert f"| sts-b | table 2 | spearman | {sts_b['spearman']:.2f} | 120 |" in (
      markdown)
  assert f"| cr | table 1 | accuracy | {cr['accuracy']:.2f} | 120 |" in markdown


def test_checkpoint_and_export_encode_alike(tiny):
  sentences = export_helpers.SENTENCES + ["a man is playing a guitar ."]
  from_checkpoint = encoders.load_encoder(tiny.model_dir,
                                          show_progress=False)(sentences)
  from_export = encoders.load_encoder(tiny.result.export_dir,
                                      show_progress=False)(sentences)
  from_pair = encoders.load_encoder(
      f"{tiny.result.encoder_dir},{tiny.result.preprocessor_dir}",
      show_progress=False)(sentences)
  expected = tiny.in_memory_embeddings(sentences)
  np.testing.assert_allclose(from_checkpoint, expected, atol=1e-5, rtol=0)
  np.testing.assert_allclose(from_export, expected, atol=1e-5, rtol=0)
  np.testing.assert_allclose(from_pair, expected, atol=1e-5, rtol=0)
