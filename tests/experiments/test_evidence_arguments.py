"""The checks every evidence script makes of its flags
(`evidence_protocol.check_counts`, `check_selection`): a bad flag is the
parser's error, one sentence and exit status 2, before anything runs."""
import argparse

import pytest

from cmlm.experiments import evidence_protocol as protocol

ARMS = ("base", "new")


def parsed(argv):
  parser = argparse.ArgumentParser(prog="evidence.py")
  parser.add_argument("--steps", type=int, default=10)
  parser.add_argument("--batch_size", type=int, default=4)
  protocol.add_arguments(parser, ARMS)
  return parser, parser.parse_args(argv)


def test_good_flags_give_the_seeds_and_arms():
  parser, args = parsed(["--seeds=3,1,2", "--arms=new"])
  protocol.check_counts(parser, args, ("steps", "batch_size"))
  protocol.check_selection(parser, args, ARMS)
  assert (args.seeds, args.arms) == ([3, 1, 2], ["new"])


def test_the_data_folder_is_a_flag_with_no_default(tmp_path):
  """--data_dir (the benchmark files) has no default: a run without it, or
  with a folder that is not there, stops in one sentence naming the flag;
  --report_only reads no data and needs none."""
  _, args = parsed([f"--data_dir={tmp_path}"])
  assert protocol.data_dir(args) == str(tmp_path)
  for argv, what in (([], "--data_dir is missing"),
                     ([f"--data_dir={tmp_path / 'none'}"], "is not a folder")):
    with pytest.raises(ValueError, match=what):
      protocol.data_dir(parsed(argv)[1])
  assert protocol.data_dir(parsed(["--report_only"])[1]) is None


@pytest.mark.parametrize("argv,message", [
    (["--steps=0"], "--steps and --batch_size must be 1 or more."),
    (["--batch_size=-1"], "--steps and --batch_size must be 1 or more."),
    (["--arms=base,other"], "--arms must be some of base,new; got other."),
    (["--seeds=1,1"], "--seeds must be distinct integers, got '1,1'."),
    (["--resamples=5"], "--resamples must be 100 or more, got 5.")])
def test_a_bad_flag_is_the_parser_s_error(argv, message, capsys):
  parser, args = parsed(argv)
  with pytest.raises(SystemExit) as exit_status:
    protocol.check_counts(parser, args, ("steps", "batch_size"))
    protocol.check_selection(parser, args, ARMS)
  assert exit_status.value.code == 2
  assert capsys.readouterr().err.strip().endswith(
      f"evidence.py: error: {message}")
