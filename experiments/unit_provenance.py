"""Where, when and from which code one evidence unit ran.

Every unit an evidence script saves (`evidence_protocol.UnitStore`) carries
these fields beside its measures, so a results file can name the code that
gave each number and the machine it ran on:

  arm, seed       the unit's;
  commit          git HEAD of the checkout whose code ran (None outside a
                  git checkout, e.g. an installed wheel);
  code_modified   tracked files under `CODE_FOLDERS` that differ from
                  `commit` ([] for a clean checkout: `UnitStore.run`
                  refuses to start a unit otherwise);
  cpu             the CPU model string (/proc/cpuinfo's "model name");
  isa             which of `ISA_FLAGS` the CPU reports;
  cores           os.cpu_count();
  date            when the unit started, UTC, ISO 8601;
  load_1min       the 1-minute load average when it started;
  command         the command line.

`code_commits` reads the commits of a results file's units: one commit, or
every commit with the units that ran at it, said as such
(`mixed_commits`).
"""
import datetime
import os
import platform
import re
import subprocess
import sys
from typing import Dict, List, Mapping, Optional, Sequence

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The folders whose code (and shipped data) a unit's numbers depend on:
# the package's folders (pyproject.toml's package-dir) and the benchmarks
# that write results files.
CODE_FOLDERS = ("cmlm", "data_pipelines", "modeling", "objectives",
                "training", "inference", "export", "evaluation",
                "experiments", "projects", "data", "benchmarks")
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "amx_tile")
# The 1-minute load at a timing's start below which the machine counts as
# quiet, and its figures as speed figures.
QUIET_LOAD = 0.5
FIELDS = ("arm", "seed", "commit", "code_modified", "cpu", "isa", "cores",
          "date", "load_1min", "command")
# The commit this process first read; its code is what is loaded.
_first_commit: Dict[str, Optional[str]] = {}


def _git(root: str, *args: str) -> Optional[str]:
  try:
    return subprocess.run(["git", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout
  except (OSError, subprocess.CalledProcessError):
    return None


def head_commit(root: str = REPO_ROOT) -> Optional[str]:
  """The checkout's HEAD, or None outside a git checkout."""
  out = _git(root, "rev-parse", "HEAD")
  return out.strip() if out else None


def modified_code(root: str = REPO_ROOT) -> List[str]:
  """Tracked files under `CODE_FOLDERS` that differ from HEAD (staged or
  not); untracked files are not code that ran from the commit's imports."""
  folders = [f for f in CODE_FOLDERS if os.path.isdir(os.path.join(root, f))]
  out = _git(root, "status", "--porcelain", "--untracked-files=no", "--",
             *folders)
  return sorted(line[3:] for line in (out or "").splitlines() if line.strip())


def _cpuinfo() -> Mapping[str, str]:
  """The first processor's fields of /proc/cpuinfo ({} where there is none)."""
  fields = {}
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        if not line.strip():
          break
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
  except OSError:
    pass
  return fields


def cpu_model() -> str:
  return _cpuinfo().get("model name") or platform.processor() or "unknown"


def isa_flags() -> Dict[str, bool]:
  """Which of `ISA_FLAGS` the CPU reports."""
  flags = set(_cpuinfo().get("flags", "").split())
  return {flag: flag in flags for flag in ISA_FLAGS}


def cpu_name(model: str) -> str:
  """A results file's CPU part: "Intel(R) Xeon(R) Processor" gives
  "intel_xeon", "AMD EPYC 7B13" gives "amd_epyc"."""
  words = re.sub(r"\((R|TM)\)", " ", model).split()
  return "_".join(re.sub(r"[^a-z0-9]", "", w.lower()) for w in words[:2]
                  ) or "unknown"


def cpu_file_name(model: str, flags: Sequence[str]) -> str:
  """`cpu_name`, with `_avx2` added for a CPU without AVX-512 (an AVX2-only
  AMD EPYC Zen 3 reports the same model name as a Zen 4, and its figures
  are kept apart) and `_no_avx2` for one without AVX2."""
  suffix = "" if "avx512f" in flags else "_avx2" if "avx2" in flags else (
      "_no_avx2")
  return cpu_name(model) + suffix


def check_code(root: str = REPO_ROOT) -> Optional[str]:
  """The commit whose code runs; ValueError (one sentence) when tracked code
  is modified, or when HEAD moved since this process first read it (the
  loaded code is then the earlier commit's)."""
  modified = modified_code(root)
  if modified:
    shown = ", ".join(modified[:5]) + (", ..." if len(modified) > 5 else "")
    raise ValueError(
        f"Not starting the unit: tracked code in {root} differs from its "
        f"commit ({shown}), so no commit would name the code that ran; "
        "commit or stash it and run again.")
  commit = head_commit(root)
  first = _first_commit.setdefault(root, commit)
  if commit != first:
    raise ValueError(
        f"Not starting the unit: {root}'s HEAD moved from {first} to "
        f"{commit} since this process started, and the code it loaded is "
        f"{first}'s; run again to start from {commit}.")
  return commit


def provenance(arm: str, seed: int, root: Optional[str] = None,
               refuse_modified: bool = True,
               argv: Optional[List[str]] = None) -> dict:
  """The `FIELDS` of one unit, taken when it starts, of the checkout `root`
  (default `REPO_ROOT`, this code's). With `refuse_modified`, `check_code`
  refuses a checkout with modified code."""
  root = root or REPO_ROOT
  commit = check_code(root) if refuse_modified else head_commit(root)
  return {"arm": arm, "seed": seed, "commit": commit,
          "code_modified": [] if refuse_modified else modified_code(root),
          "cpu": cpu_model(), "isa": isa_flags(), "cores": os.cpu_count(),
          "date": datetime.datetime.now(datetime.timezone.utc)
                  .isoformat(timespec="seconds"),
          "load_1min": round(os.getloadavg()[0], 2),
          # The interpreter by name: a results file names no local path.
          "command": " ".join(["python"] + list(
              sys.argv if argv is None else argv))}


def without_local_paths(command: str, flags: Sequence[str]) -> str:
  """`command` with the value of each `--FLAG=value` of `flags` written as
  FLAG (upper case): a results file names no folder of the machine it ran
  on (`--data_dir=/data/x` and `--data_dir /data/x` become
  `--data_dir=DATA_DIR` and `--data_dir DATA_DIR`)."""
  words, hide_next = [], None
  for word in command.split(" "):
    name = word[2:].split("=", 1)[0] if word.startswith("--") else None
    if hide_next:
      word, hide_next = hide_next.upper(), None
    elif name in flags and "=" in word:
      word = f"--{name}={name.upper()}"
    elif name in flags:
      hide_next = name  # `--flag value`
    words.append(word)
  return " ".join(words)


def code_commits(units: Mapping[str, Mapping]) -> dict:
  """`commit`, `unit_commits` and `mixed_commits` of a results file from
  its units ({label: unit}): `commit` is the units' one commit, or the list
  of them when they differ, which `mixed_commits` then says in a sentence
  (None when they agree). A unit that recorded none counts as
  "unrecorded", and so does one whose code was modified ("<commit>+modified")."""
  by_commit: Dict[str, List[str]] = {}
  for label, unit in units.items():
    commit = unit.get("commit") or "unrecorded"
    if unit.get("code_modified"):
      commit += "+modified"
    by_commit.setdefault(commit, []).append(label)
  commits = sorted(by_commit)
  mixed = None
  if len(commits) > 1:
    mixed = (f"The units ran at {len(commits)} different states of the code "
             f"({', '.join(commits)}; unit_commits lists which unit ran at "
             "which): their differences may be the code's, not the arms'.")
  return {"commit": commits[0] if len(commits) == 1 else commits,
          "unit_commits": by_commit, "mixed_commits": mixed}
