"""What a reader is given, checked before any work: a file to read, a model
to load.

Free of TensorFlow, so that a command says a wrong path in one line before
TensorFlow loads (seconds), and the readers (`inference.embedders`,
`inference.mine_files`, `inference.nearest_neighbours`) say it in the same
words. A remote model (`gs://...`) is left to its file system, as is a
remote file where its reader goes through `tf.io.gfile`.
"""
import os


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


def check_model(model: str, flag: str = "--model") -> None:
  """Each part of `model` (an export, a training run, a SavedModel, or
  `ENCODER_DIR,PREPROCESSOR_DIR`) exists; FileNotFoundError (one line naming
  `flag` and the missing part) otherwise. What kind of model it is, and
  whether it loads, is the loader's to say (`inference.embedders`).

  Examples:
    >>> check_model("exports/tiny")
    >>> check_model("exports/tiny/encoder,exports/tiny/preprocessor")
  """
  for part in model.split(","):
    if not _is_remote(part) and not os.path.exists(part):
      missing = "" if part == model else f": {part}"
      raise FileNotFoundError(f"{flag}={model}{missing} does not exist.")


def _is_remote(path: str) -> bool:
  return "://" in path
