"""What a reader is given, checked before any work: a file to read, a model
to load.

Free of TensorFlow, so that a command says a wrong path in one line before
TensorFlow loads (seconds), and the readers (`inference.embedders`,
`inference.mine_files`, `inference.nearest_neighbours`) say it in the same
words. A remote model (`gs://...`) is left to its file system, as is a
remote file where its reader goes through `tf.io.gfile`.
"""
import os

# What a reader's `--model` may be (every part a directory).
MODEL_KINDS = ("a training model_dir, an export directory, a SavedModel, or "
               "ENCODER_DIR,PREPROCESSOR_DIR")


def check_file(path: str, flag: str, remote: bool = False) -> None:
  """`path`, given as `flag`, is a file; FileNotFoundError (one line naming
  `flag`) otherwise. `remote`: the reader takes remote paths (`gs://...`,
  through `tf.io.gfile`), which are left to it.

  Examples:
    >>> check_file("sentences.txt", "--input")
    >>> check_file("gs://bucket/sentences.txt", "--input", remote=True)
  """
  if not path or (not (remote and _is_remote(path)) and
                  not os.path.isfile(path)):
    raise FileNotFoundError(f"{flag}={path} is not a file.")


def check_model(model: str, flag: str = "--model",
                checkpoint_prefix: bool = False) -> None:
  """Each part of `model` (an export, a training run, a SavedModel, or
  `ENCODER_DIR,PREPROCESSOR_DIR`: directories, every one) exists and is a
  directory; FileNotFoundError (one line naming `flag` and the part)
  otherwise. `checkpoint_prefix`: a part may also be a checkpoint's prefix
  (`DIR/ckpt-1000`, its `.index` beside it), as `import --source` takes.
  What kind of model it is, and whether it loads, is the loader's to say
  (`inference.embedders`). An empty `model` is ValueError: `flag` is
  required.

  Examples:
    >>> check_model("exports/tiny")
    >>> check_model("exports/tiny/encoder,exports/tiny/preprocessor")
    >>> check_model("runs/tiny/ckpt-20", "--source", checkpoint_prefix=True)
  """
  if not model:
    raise ValueError(f"{flag} is required: {MODEL_KINDS}.")
  for part in model.split(","):
    if _is_remote(part) or (checkpoint_prefix and
                            os.path.isfile(part + ".index")):
      continue
    named = "" if part == model else f": {part}"
    if not os.path.exists(part):
      raise FileNotFoundError(f"{flag}={model}{named} does not exist.")
    if not os.path.isdir(part):
      raise FileNotFoundError(f"{flag}={model}{named} is not a directory.")


def _is_remote(path: str) -> bool:
  return "://" in path
