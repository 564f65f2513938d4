"""An export reads its run once: the record `inference.run_record.read_run`
builds is carried to the preprocessor, the card, every artifact writer and
agreement check and the sentence-transformers folder.

Counted as a user runs it, `python -m cmlm export` with every format: each
open of the run's params.yaml or of its vocabulary file by Python (`open`,
`io.open`, `tf.io.gfile.GFile`, `shutil.copyfile`'s own opens included).
TensorFlow's C++ ops (the lookup table and the SavedModel asset copy) read
the vocabulary outside Python and are not counted.
"""
import builtins
import collections
import io
import os

import pytest

import cmlm.export  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf

from cmlm.commands import export as export_command
from cmlm.training import run_dir

pytestmark = pytest.mark.slow

FORMATS = "saved_model,tflite,onnx,sentence_transformers"


class _OpenCounter:
  """Counts opens for reading of the files in `paths` (by real path)."""

  def __init__(self, paths):
    self.paths = {os.path.realpath(p): name for name, p in paths.items()}
    self.reads = collections.Counter()

  def note(self, path, mode):
    if isinstance(path, (str, bytes, os.PathLike)) and "r" in str(mode):
      name = self.paths.get(os.path.realpath(os.fsdecode(path)))
      if name:
        self.reads[name] += 1

  def wrap_open(self, open_function):
    def counted(file, mode="r", *args, **kwargs):
      self.note(file, mode)
      return open_function(file, mode, *args, **kwargs)
    return counted

  def wrap_gfile(self, gfile_class):
    counter = self

    class CountedGFile(gfile_class):
      def __init__(self, name, mode="r"):
        counter.note(name, mode)
        super().__init__(name, mode)
    return CountedGFile


def test_export_with_every_format_reads_params_and_vocabulary_once(
    tiny_run, tmp_path, monkeypatch):
  model_dir = tiny_run[0]
  params = run_dir.load_params(model_dir)
  counter = _OpenCounter({
      "params.yaml": os.path.join(model_dir, run_dir.PARAMS_FILE),
      "vocabulary": params.task.tokenization.vocab_file})
  monkeypatch.setattr(builtins, "open", counter.wrap_open(builtins.open))
  monkeypatch.setattr(io, "open", counter.wrap_open(io.open))
  monkeypatch.setattr(tf.io.gfile, "GFile",
                      counter.wrap_gfile(tf.io.gfile.GFile))
  export_command.main([f"--model_dir={model_dir}",
                       f"--export_dir={tmp_path / 'export'}",
                       f"--formats={FORMATS}"])
  written = os.path.join(tmp_path, "export", "current")
  for part in ("tflite", "onnx", "sentence_transformers"):
    assert os.path.isdir(os.path.join(written, part)), part
  assert counter.reads == {"params.yaml": 1, "vocabulary": 1}
