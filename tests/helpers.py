"""Tiny configs and batches shared by the tests (hidden 16, one layer)."""
import io
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from cmlm import layering
from cmlm.modeling import model_builder
from official.nlp.configs import encoders

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The developers' copy of public data beside the checkout (corpora/,
# bitext/, nli/, and eval/ in eval's --data_dir layout), which some tests
# read and skip without. No code of the garden names it: the commands and
# scripts take it by flag, the experiments read `source_data/`.
SHARED_DATA = os.path.join(REPO_ROOT, "..", "shared", "data")
SHARED_EVAL_DATA = os.path.join(SHARED_DATA, "eval")
# Build outputs and environments that hold copies of the garden's files.
SKIPPED_FOLDERS = {"build", "dist", ".venv", "venv", "__pycache__", "site"}
VOCAB_SIZE = 40
SPECIAL_IDS = (0, 1, 2, 3, 4)  # [PAD] [UNK] [CLS] [SEP] [MASK]


def run_command(argv, capsys):
  """`python -m cmlm ARGV` in this process, through the command line's own
  `main` (its error handling included): (exit status, stderr lines)."""
  completed = run_command_here(argv, capsys)
  return completed.returncode, completed.stderr.strip().splitlines()


def run_command_here(argv, capsys, input_text=None):
  """`python -m cmlm ARGV` in this process (`input_text` its stdin), as
  `subprocess.run` would report it: a `CompletedProcess` with the exit
  status and what the command wrote to stdout and stderr."""
  from cmlm import __main__ as command_line  # pylint: disable=g-import-not-at-top
  capsys.readouterr()
  stdin = sys.stdin
  if input_text is not None:
    sys.stdin = io.TextIOWrapper(io.BytesIO(input_text.encode("utf-8")),
                                 encoding="utf-8")
  try:
    command_line.main(["cmlm"] + list(argv))
    status = 0
  except SystemExit as exited:
    status = 0 if exited.code is None else exited.code
  finally:
    sys.stdin = stdin
  out, err = capsys.readouterr()
  return subprocess.CompletedProcess(["cmlm"] + list(argv), status, out, err)


def walk_sources(top):
  """The .py files under `top`, leaving out build outputs, virtualenvs,
  egg-info and hidden folders: every test that reads the garden's sources
  walks them with this (tests/test_layering.py checks it on a build/)."""
  for folder, dirs, files in os.walk(top):
    dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                     and d not in SKIPPED_FOLDERS
                     and not d.endswith(".egg-info"))
    for name in sorted(files):
      if name.endswith(".py"):
        yield os.path.join(folder, name)


def tiny_model_config(num_projections=3, **kwargs):
  return model_builder.SiameseEncoderConfig(
      encoder=encoders.BertEncoderConfig(
          vocab_size=VOCAB_SIZE, hidden_size=16, num_layers=1,
          num_attention_heads=2, intermediate_size=32,
          max_position_embeddings=32, dropout_rate=0.0,
          attention_dropout_rate=0.0),
      num_projections=num_projections, **kwargs)


def train_step(task, features, model, optimizer, metrics=None):
  """One step as the trainer takes it when it is finite: the task's
  `train_step` (loss, gradients), then `trainer.apply_update`. Returns the
  loss."""
  from cmlm.training import trainer  # pylint: disable=g-import-not-at-top
  loss, gradients = task.train_step(features, model, optimizer, metrics)
  trainer.apply_update(model, optimizer, gradients)
  return loss


def tiny_run_overrides(train_steps: int, objective: str = "cmlm") -> dict:
  """`params.override()` of cmlm/tiny for short real runs: a 1-layer,
  16-wide encoder, batches of 4 x 16 tokens, a checkpoint every 2 steps."""
  data = {"global_batch_size": 4, "max_predictions_per_seq": 5}
  return {
      "task": {"model": {"encoder": {"hidden_size": 16, "num_layers": 1,
                                     "num_attention_heads": 2,
                                     "intermediate_size": 32}},
               "tokenization": {"seq_length": 16},
               "objectives": {objective: {"train_data": data,
                                          "validation_data": data}}},
      "trainer": {"train_steps": train_steps, "steps_per_loop": 2,
                  "checkpoint_interval": 2, "summary_interval": 2}}


def tiny_run_params(train_steps: int = 4):
  """cmlm/tiny with `tiny_run_overrides`: a real run in seconds."""
  from cmlm.experiments import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  params = exp_factory.get_exp_config("cmlm/tiny")
  params.override(tiny_run_overrides(train_steps))
  return params


def fake_batch(batch_size=4, seq_length=10, num_predictions=3, seed=0,
               s1_token_range=(5, VOCAB_SIZE), s2_token_range=(5, VOCAB_SIZE)):
  """A CMLM feature batch: [CLS] tokens [SEP] then padding, s2 masked."""
  rng = np.random.default_rng(seed)
  def sentence(low_high):
    ids = np.zeros([batch_size, seq_length], np.int32)
    mask = np.zeros_like(ids)
    for row in range(batch_size):
      length = rng.integers(num_predictions + 3, seq_length + 1)
      ids[row, 0], ids[row, length - 1] = 2, 3
      ids[row, 1:length - 1] = rng.integers(*low_high, size=length - 2)
      mask[row, :length] = 1
    return ids, mask
  s1_ids, s1_mask = sentence(s1_token_range)
  s2_ids, s2_mask = sentence(s2_token_range)
  positions = np.tile(np.arange(1, num_predictions + 1), [batch_size, 1])
  original = np.take_along_axis(s2_ids, positions, axis=1)
  masked = s2_ids.copy()
  np.put_along_axis(masked, positions, 4, axis=1)
  weights = np.ones([batch_size, num_predictions], np.float32)
  weights[0, -1] = 0.0  # one unused prediction slot
  features = dict(
      s1_input_word_ids=s1_ids, s1_input_mask=s1_mask,
      s1_input_type_ids=np.zeros_like(s1_ids),
      s2_input_word_ids=masked, s2_input_mask=s2_mask,
      s2_input_type_ids=np.zeros_like(s2_ids),
      masked_lm_positions=positions.astype(np.int32),
      masked_lm_ids=original.astype(np.int32), masked_lm_weights=weights)
  return {k: tf.constant(v) for k, v in features.items()}


def encoder_inputs(features, prefix="s1_"):
  return {key: features[prefix + key]
          for key in ("input_word_ids", "input_mask", "input_type_ids")}


def tiny_task_config(vocab_file: str = "", objectives=None, **model_kwargs):
  """A sentence-encoder task config on the tiny model, for `fake_batch`
  batches (sequence length 10); CMLM alone unless `objectives` says."""
  from cmlm.data_pipelines import tokenization  # pylint: disable=g-import-not-at-top
  from cmlm.objectives import base  # pylint: disable=g-import-not-at-top
  from cmlm.objectives import cmlm  # pylint: disable=g-import-not-at-top
  from cmlm.training import task  # pylint: disable=g-import-not-at-top
  return task.SentenceEncoderTaskConfig(
      model=tiny_model_config(**model_kwargs),
      tokenization=tokenization.TokenizationConfig(vocab_file=vocab_file,
                                                   seq_length=10),
      objectives=base.ObjectivesConfig(
          objectives or {"cmlm": cmlm.CmlmObjectiveConfig()}))


def replicated_loss_and_gradient(strategy, build_loss, inputs, dim=5):
  """One step of a cross-replica loss on `inputs` split across `strategy`'s
  replicas, in Model Garden's convention.

  `inputs` is a tuple of arrays batched on axis 0; the first two (vectors of
  width `dim`) go through a shared `[dim, dim]` projection, the rest as they
  are. `build_loss()` (called in the strategy's scope) returns a
  `loss(projected_a, projected_b, *rest)`. Returns the mean of the replicas'
  losses and the summed gradient of loss / num_replicas w.r.t. the
  projection: one device on the whole batch must give the same.
  """
  with strategy.scope():
    projection = tf.Variable(tf.eye(dim) + 0.1)
    loss_fn = build_loss()
  dataset = strategy.experimental_distribute_dataset(
      tf.data.Dataset.from_tensors(tuple(inputs)))

  @tf.function(autograph=False)  # as the garden's train step
  def step(batch):
    def replica_step(a, b, *rest):
      with tf.GradientTape() as tape:
        loss = loss_fn(tf.matmul(a, projection), tf.matmul(b, projection),
                       *rest)
        scaled = loss / strategy.num_replicas_in_sync
      return loss, tape.gradient(scaled, projection)
    loss, gradient = strategy.run(replica_step, args=batch)
    return (strategy.reduce("MEAN", loss, axis=None),
            strategy.reduce("SUM", gradient, axis=None))

  loss, gradient = step(next(iter(dataset)))
  return float(loss), gradient.numpy()


# What the garden's wheel is built from (setup.py's package_dir folders,
# cmlm/layering.py's: every layer's and data/) and the folder names of a
# user's project that once shadowed the garden's top-level packages
# (issue 27).
WHEEL_FILES = ("pyproject.toml", "setup.py", "README.md", "LICENSE",
               "requirements.txt", "requirements-beam.txt")
WHEEL_FOLDERS = layering.folders()
USER_PACKAGES = ("training", "evaluation", "export", "modeling")


def install_wheel(root: str) -> str:
  """The garden built as a wheel offline from a copy of the tree (which
  stays clean) and installed with `pip --target` into `root`/site, without
  dependencies (those of this environment serve). Returns that directory."""
  import shutil  # pylint: disable=g-import-not-at-top
  source, wheels = os.path.join(root, "source"), os.path.join(root, "wheel")
  os.makedirs(source)
  for name in WHEEL_FILES:
    shutil.copy(os.path.join(REPO_ROOT, name), source)
  ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "tests")
  for folder in WHEEL_FOLDERS:
    shutil.copytree(os.path.join(REPO_ROOT, folder),
                    os.path.join(source, folder), ignore=ignore)
  subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                  "--no-build-isolation", "--no-index", "-q", source,
                  "-w", wheels], check=True, capture_output=True, timeout=300)
  [wheel] = os.listdir(wheels)
  site = os.path.join(root, "site")
  subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                  "--no-index", "-q", "--target", site,
                  os.path.join(wheels, wheel)], check=True,
                 capture_output=True, timeout=300)
  return site


def user_project(root: str) -> str:
  """`root`/userproj: a user's folder with packages of its own named like
  the garden's layers (each fails when imported). Returns its path."""
  user = os.path.join(root, "userproj")
  for name in USER_PACKAGES:
    os.makedirs(os.path.join(user, name))
    with open(os.path.join(user, name, "__init__.py"), "w") as f:
      f.write("raise ImportError('mine')\n")
  return user


def installed_env(site: str) -> dict:
  """The environment of a process that uses the wheel installed in `site`:
  no bytecode written, Keras left for `cmlm` to choose."""
  env = dict(os.environ, PYTHONPATH=site, TF_CPP_MIN_LOG_LEVEL="2",
             PYTHONDONTWRITEBYTECODE="1")
  env.pop("TF_USE_LEGACY_KERAS", None)  # the cmlm package sets it
  env.pop("CMLM_DEBUG", None)
  return env


def files_under(path: str) -> dict:
  """Every file under `path` (relative name -> size and mtime)."""
  found = {}
  for folder, _, files in os.walk(path):
    for name in files:
      full = os.path.join(folder, name)
      stat = os.stat(full)
      found[os.path.relpath(full, path)] = (stat.st_size, stat.st_mtime_ns)
  return found
