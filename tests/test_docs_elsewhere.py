"""docs/elsewhere.md ("Use a garden model elsewhere"): its Python examples
run as written, in order, in one interpreter without the garden, from a
directory where `exports/tiny` is an export with every format."""
import os
import re
import subprocess
import sys

import pytest

from tests import helpers

PAGE = os.path.join(helpers.REPO_ROOT, "docs", "elsewhere.md")


def page_snippets():
  with open(PAGE, encoding="utf-8") as f:
    return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_the_page_documents_the_export_command_it_needs():
  with open(PAGE, encoding="utf-8") as f:
    page = f.read()
  assert ("--formats=saved_model,tflite,onnx,sentence_transformers" in page)
  assert len(page_snippets()) == 5


@pytest.mark.slow
def test_the_page_s_examples_run_as_written_without_the_garden(
    tiny_artifacts_export, tmp_path):
  os.makedirs(tmp_path / "exports")
  os.symlink(tiny_artifacts_export.export_dir, tmp_path / "exports" / "tiny")
  script = "".join(f"exec(compile({code!r}, 'example', 'exec'), {{}})\n"
                   for code in page_snippets())
  script += ("import sys\n"
             "print(sorted(m for m in ('cmlm', 'tests')\n"
             "             if m in sys.modules))\n")
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", HF_HUB_OFFLINE="1")
  env.pop("TF_USE_LEGACY_KERAS", None)  # the TF-Hub example sets it
  env.pop("PYTHONPATH", None)
  completed = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                             env=env, capture_output=True, text=True,
                             timeout=300)
  assert completed.returncode == 0, completed.stderr[-3000:]
  dim = tiny_artifacts_export.sentence_transformers["dimension"]
  assert completed.stdout.strip().splitlines() == (
      [f"(2, {dim})"] * 5 + ["[]"]), completed.stdout
