"""`python -m cmlm eval` end to end on a tiny trained run (the session's
`tiny`, conftest.py: read, never written; the report goes to tmp_path)."""
import json
import os

import numpy as np
import pytest

import cmlm.evaluation  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf

from cmlm.evaluation import encoders
from tests import helpers
from tests.helpers import SHARED_EVAL_DATA as DEFAULT_DATA_DIR
from tests.export import export_helpers as export_helpers

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not os.path.isdir(DEFAULT_DATA_DIR),
                    reason="../shared/data/eval is absent")
def test_cli_eval_of_a_trained_run_writes_the_report(tiny, tmp_path, capsys):
  report_dir = tmp_path / "report"
  completed = helpers.run_command_here(
      ["eval", f"--model={tiny.model_dir}", "--tasks=sts-b,cr",
       f"--data_dir={DEFAULT_DATA_DIR}", "--max_examples=120",
       "--batch_size=64", f"--report_dir={report_dir}"], capsys)
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
  assert (f"| sts-b | table 2 | spearman | {sts_b['spearman']:.2f} | 120 | "
          "sts-dev.csv |") in markdown
  assert f"| cr | table 1 | accuracy | {cr['accuracy']:.2f} | 120 |" in markdown


def test_a_run_is_evaluated_as_it_was_trained(tiny):
  """--model=MODEL_DIR restores the latest checkpoint and tokenizes as in
  training: the embeddings are the in-memory model's."""
  sentences = export_helpers.SENTENCES + ["a man is playing a guitar ."]
  expected = tiny.model.encoder(
      tiny.tokenizer.tokenize_and_pack(tf.constant(sentences)),
      training=False)["default"].numpy()
  from_checkpoint = encoders.load_encoder(tiny.model_dir,
                                          show_progress=False)(sentences)
  np.testing.assert_allclose(from_checkpoint, expected, atol=1e-5, rtol=0)
