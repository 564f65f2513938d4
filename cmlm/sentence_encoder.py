"""`cmlm.SentenceEncoder`: any model of the garden as a Python object.

    from cmlm import SentenceEncoder
    model = SentenceEncoder("exports/tiny")   # or a run, a SavedModel, a pair
    embeddings = model.encode(["A sentence.", "Another."], batch_size=32,
                              normalize_embeddings=True)  # np.ndarray [2, dim]

`encode` takes sentence-transformers' arguments (`SentenceTransformer.encode`:
`batch_size`, `show_progress_bar`, `precision`, `normalize_embeddings`,
`truncate_dim`, `prompt`, ...) with the same meaning and order of operations
(truncate, normalise, quantize), and ignores the keyword arguments it has no
use for (MTEB's `task_name`, `prompt_type`, a `device`), so an instance is an
MTEB model (MTEB 1's `encode(sentences, task_name=..., prompt_type=...)`,
and MTEB 2's DataLoader of `{"text": [...]}` batches with `task_metadata`,
`hf_split`, `hf_subset` keywords).

Every model kind loads through `cmlm.inference.embedders.load_embedder`, the
garden's one loader, with every project registered (`cmlm.registry_imports`),
so a run of any project's experiment loads too.
"""
import os
import sys
from typing import Optional, Sequence, Union

import numpy as np

from cmlm import registry_imports  # noqa: F401  (every project's models load)
from cmlm.inference import embedders
from cmlm.inference import postprocess
from cmlm.inference import progress as progress_lib
from cmlm.inference import run_record

_OUTPUT_VALUES = ("sentence_embedding", None)


class SentenceEncoder:
  """Sentences to embeddings with a model of the garden, or any TF-Hub one.

  Args:
    model: a path to any of: an export of `python -m cmlm export` (its
      published version), a text-to-embedding SavedModel or a TF Serving base
      path (`serving/`), a training `--model_dir` (latest checkpoint, or
      `checkpoint`), a TF-Hub style `encoder/` + `preprocessor/` directory,
      or `"ENCODER_DIR,PREPROCESSOR_DIR"`.
    checkpoint: with a training run, a checkpoint prefix (`RUN/ckpt-N`).
    backend: with an export: "saved_model", "tflite" or "onnx" (its
      artifacts of `export --formats`); None: the fastest float32 one it
      holds (with `quantized`, the fastest int8 one).
    quantized: the tflite / onnx artifact's int8 model (not `precision`,
      which quantizes the embeddings).

  Attributes:
    model_path: `model` as given.
    normalizes_in_graph: the model L2-normalises its embeddings itself (our
      serving model exported with `--normalize`); then
      `normalize_embeddings=False` is refused.

  Examples:
    >>> from cmlm import SentenceEncoder
    >>> model = SentenceEncoder("runs/demo/export")  # after `make demo`
    >>> embeddings = model.encode(["A man plays a guitar.",
    ...                            "Someone plays music."],
    ...                           normalize_embeddings=True)
    >>> embeddings.shape
    (2, 128)
    >>> similarity = float(embeddings[0] @ embeddings[1])  # their cosine
  """

  def __init__(self, model: Union[str, os.PathLike],
               checkpoint: Optional[str] = None,
               backend: Optional[str] = None, quantized: bool = False):
    self.model_path = os.fspath(model)
    # A training run is read once (`inference.run_record`); its record is
    # kept for what else asks about the run (`cmlm.mteb_model`'s metadata).
    self.run = (run_record.read_run(self.model_path, checkpoint,
                                    find_report=False,
                                    checkpoint_name="checkpoint")
                if run_record.is_run(self.model_path) else None)
    self._embedder = embedders.load_embedder(self.run or self.model_path,
                                             checkpoint, backend, quantized,
                                             embedders.ARGUMENT_NAMES)
    self.normalizes_in_graph = self._embedder.normalizes_in_graph

  def __repr__(self) -> str:
    return f"SentenceEncoder({self.model_path!r})"

  def get_sentence_embedding_dimension(self) -> int:
    """The size of the model's embeddings (before any `truncate_dim`)."""
    return self._embedder.dimension

  def get_embedding_dimension(self) -> int:
    """`get_sentence_embedding_dimension`, by sentence-transformers 6.2's
    name for it."""
    return self.get_sentence_embedding_dimension()

  def encode(self, sentences: Union[str, Sequence[str]],
             prompt_name: Optional[str] = None, prompt: Optional[str] = None,
             batch_size: int = 32, show_progress_bar: Optional[bool] = None,
             output_value: Optional[str] = "sentence_embedding",
             precision: str = "float32", convert_to_numpy: bool = True,
             convert_to_tensor: bool = False, device=None,
             normalize_embeddings: Optional[bool] = None,
             truncate_dim: Optional[int] = None,
             calibration_embeddings: Optional[np.ndarray] = None,
             ranges: Optional[np.ndarray] = None, **kwargs) -> np.ndarray:
    """The embeddings of `sentences`: `[len(sentences), dim]`, or `[dim]`
    for one string; row i is sentence i's.

    Args (sentence-transformers' names and meaning):
      sentences: a string, a sequence of strings, or batches
        `{"text": [...]}` (MTEB 2's DataLoader of `BatchedInput`).
      prompt_name: refused (the garden's models define no prompts).
      prompt: a text put before every sentence.
      batch_size: sentences per model call; sentences are ordered by length
        first, so that each batch pads little.
      show_progress_bar: a progress line on stderr; None shows it when
        stderr is a terminal.
      output_value: "sentence_embedding" (or None); token embeddings are not
        offered.
      precision: float32, int8, uint8, binary, ubinary
        (`inference.quantization`, as `quantize_embeddings`).
      convert_to_numpy, convert_to_tensor, device: accepted; the result is
        always a NumPy array, TensorFlow places the model itself.
      normalize_embeddings: True: unit vectors (after `truncate_dim`). None
        (the default): as the model gives them. False: not normalised,
        refused where the model normalises in its graph
        (`normalizes_in_graph`).
      truncate_dim: keep the first dimensions (1..dim).
      calibration_embeddings, ranges: int8/uint8 buckets, as
        `quantize_embeddings` takes them (default: from these embeddings).
      **kwargs: ignored (MTEB passes `task_name`, `prompt_type`, ...).
    """
    del convert_to_numpy, convert_to_tensor, device, kwargs  # see Args
    if prompt_name is not None:
      raise ValueError(f"prompt_name={prompt_name!r}: this model defines no "
                       "prompts; pass the text itself as prompt=.")
    if output_value not in _OUTPUT_VALUES:
      raise ValueError(f"output_value={output_value!r}: only "
                       "'sentence_embedding' is offered.")
    if batch_size < 1:
      raise ValueError(f"batch_size must be 1 or more, got {batch_size}.")
    if truncate_dim is not None and truncate_dim < 1:
      raise ValueError(f"truncate_dim must be 1 or more, got {truncate_dim}.")
    postprocess.check_normalize(normalize_embeddings, self.normalizes_in_graph,
                                self.model_path)
    single = isinstance(sentences, str)
    texts = [sentences] if single else _sentence_list(sentences)
    if prompt:
      texts = [prompt + text for text in texts]
    if show_progress_bar is None:
      show_progress_bar = getattr(sys.stderr, "isatty", lambda: False)()
    progress = progress_lib.Progress(len(texts), enabled=show_progress_bar)
    embeddings = self._embedder.embed(texts, batch_size, progress.update)
    progress.close()
    embeddings = postprocess.postprocess(
        embeddings, truncate_dim, normalize_embeddings, precision,
        calibration_embeddings, ranges)
    return embeddings[0] if single else embeddings


def _sentence_list(sentences) -> list:
  """`sentences` (not one string) as a list of valid strings, or a
  TypeError / ValueError naming the argument, the index and what it takes."""
  expected = "a string or a sequence of strings"
  if isinstance(sentences, (bytes, bytearray)):
    raise TypeError(f"sentences is {type(sentences).__name__}, not {expected};"
                    " decode it first (sentences.decode('utf-8')).")
  if isinstance(sentences, dict) or not hasattr(sentences, "__iter__"):
    raise TypeError(f"sentences must be {expected}, got "
                    f"{type(sentences).__name__}.")
  texts = list(sentences)
  batches = [isinstance(item, dict) for item in texts]
  if any(batches) and not all(batches):
    first_batch, first_other = batches.index(True), batches.index(False)
    raise TypeError(
        f"sentences mixes batches and sentences: sentences[{first_batch}] is "
        f"a dict (a batch {{'text': [...]}}), sentences[{first_other}] is "
        f"{type(texts[first_other]).__name__}; pass a list of strings, or "
        "of batches only.")
  if any(batches):
    # MTEB 2 passes a DataLoader of batches {"text": [...], ...}.
    texts = [text for index, batch in enumerate(texts)
             for text in _batch_texts(batch, index)]
  for index, text in enumerate(texts):
    if not isinstance(text, str):
      hint = (" (decode bytes to str first)"
              if isinstance(text, (bytes, bytearray)) else "")
      raise TypeError(f"sentences[{index}] is {type(text).__name__}; expected "
                      f"str{hint}.")
    try:
      text.encode("utf-8")
    except UnicodeEncodeError as error:
      raise ValueError(
          f"sentences[{index}] is not valid Unicode: character "
          f"{error.start} is a lone surrogate "
          f"({text[error.start]!r}); decode its source with "
          "errors='replace' or remove it.") from None
  return texts


def _batch_texts(batch: dict, index: int) -> list:
  """The sentences of batch `index` (`{"text": [...]}`), or a TypeError
  naming it."""
  if "text" not in batch:
    raise TypeError(f"sentences[{index}] is a batch without 'text' (keys: "
                    f"{', '.join(map(str, batch)) or 'none'}); a batch is "
                    "{'text': [sentence, ...]}.")
  text = batch["text"]
  if isinstance(text, (str, bytes, dict)) or not hasattr(text, "__iter__"):
    raise TypeError(f"sentences[{index}]['text'] is {type(text).__name__}; a "
                    "batch's 'text' is a list of sentences.")
  return list(text)
