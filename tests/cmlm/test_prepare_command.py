"""`python -m cmlm prepare`: Beam's options pass through after `--`, the
table ends the run, errors are one line, and without Beam one line says how
to install it."""
import json
import os
import subprocess
import sys

import pytest

from cmlm.commands import prepare
from tests import helpers
from tests.data_pipelines import data_helpers


def run_prepare(*args):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  env.pop("CMLM_DEBUG", None)
  return subprocess.run([sys.executable, "-m", "cmlm", "prepare", *args],
                        cwd=helpers.REPO_ROOT, env=env, capture_output=True,
                        text=True, timeout=300)


def test_pipeline_args_put_the_users_beam_options_last():
  args = prepare.pipeline_args("DirectRunner", 0, ["--direct_num_workers=3"])
  assert args[0] == "--runner=DirectRunner"
  assert args[1] == f"--direct_num_workers={os.cpu_count()}"
  assert args[-1] == "--direct_num_workers=3"  # Beam: the last one wins
  assert prepare.pipeline_args("DirectRunner", 1, []) == [
      "--runner=DirectRunner", "--direct_num_workers=1"]
  assert prepare.pipeline_args("DataflowRunner", 4, ["--project=p"]) == [
      "--runner=DataflowRunner", "--project=p"]
  assert prepare.split_beam_arguments(["--input=a", "--", "--project=p"]) == (
      ["--input=a"], ["--project=p"])


def test_without_beam_one_line_says_how_to_install_it(monkeypatch, capsys,
                                                      tmp_path):
  monkeypatch.setitem(sys.modules, "apache_beam", None)
  with pytest.raises(SystemExit) as stopped:
    prepare.main([f"--input={tmp_path}", f"--output={tmp_path}/p",
                  "--pair_unit=sentence"])
  assert stopped.value.code == 2
  line, = capsys.readouterr().err.strip().splitlines()
  assert line.startswith("cmlm prepare: error: prepare needs Apache Beam")
  assert "pip install -r requirements-beam.txt" in line
  assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_prepare_writes_records_a_manifest_and_the_table(tmp_path):
  pytest.importorskip("apache_beam", reason="Apache Beam is an extra: pip "
                      "install -r requirements-beam.txt")
  text = data_helpers.write_numbered_corpus(tmp_path / "corpus", 12)
  vocab = data_helpers.write_tiny_vocab(tmp_path)
  prefix = tmp_path / "out" / "pairs"
  result = run_prepare(f"--input=en={text}", f"--output={prefix}",
                       f"--vocab_file={vocab}", "--seq_length=16",
                       "--num_shards=2", "--", "--direct_num_workers=1")
  assert result.returncode == 0, result.stderr[-3000:]
  assert "|  | en | total |" in result.stdout
  assert "| pairs | 12 | 12 |" in result.stdout
  manifest = json.loads((tmp_path / "out" / "pairs.pairs.json").read_text())
  assert manifest["pair_unit"] == "sequence" and manifest["max_tokens"] == 14
  assert manifest["languages"] == {"en": 12}
  assert sorted(os.listdir(tmp_path / "out")) == [
      "pairs.pairs.json", "pairs.tfrecord-00000-of-00002",
      "pairs.tfrecord-00001-of-00002"]
  missing_vocab = run_prepare(f"--input={text}", f"--output={prefix}2")
  assert missing_vocab.returncode == 2
  assert missing_vocab.stderr.strip().splitlines() == [
      "cmlm prepare: error: --pair_unit=sequence packs sentences to the "
      "run's token budget: give the run's --vocab_file (and --seq_length, "
      "--lower_case)."]
  exists = run_prepare(f"--input={text}", f"--output={prefix}",
                       "--pair_unit=sentence", "--direct_num_workers=1")
  assert exists.returncode == 2 and "--overwrite" in exists.stderr
