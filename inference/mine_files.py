"""`python -m cmlm mine`: two files of sentences (or their embeddings) to a
TSV file of mined pairs (`bitext_mining.mine`).

Each side is a .txt file of sentences (one a line), encoded with a model
through `encode_files.encode_file` (with a Dask client, by shards on its
workers: `dask_encoding.encode`) into a temporary .npy, or a .npy of its
embeddings (`read_embeddings`, memory-mapped), or both: the embeddings are
then mined and the sentences written beside the scores. Every file and
argument is checked before a model loads or a search starts; the TSV is
written through a temporary and renamed, so a failed run leaves none.
"""
import contextlib
import functools
import os
import sys
import tempfile
from typing import Callable, ContextManager, Dict, List, Optional

import numpy as np

from cmlm.data_pipelines import atomic_file
from cmlm.data_pipelines import text_lines
from cmlm.inference import bitext_mining
from cmlm.inference import dask_encoding
from cmlm.inference import input_paths
from cmlm.inference import nearest_neighbours
from cmlm.inference import progress as progress_lib


def read_sentences(path: str, flag: str) -> List[str]:
  """The sentences of the .txt file `path`, one a line, as encode reads a
  .txt (`inference.text_inputs`, without loading TensorFlow); errors name
  `flag`."""
  input_paths.check_file(path, flag)
  with open(path, "rb") as f:
    data = f.read()
  if data.startswith(text_lines.UTF8_BOM):
    data = data[len(text_lines.UTF8_BOM):]
  try:
    sentences = [line.decode("utf-8") for line in text_lines.split_lines(data)]
  except UnicodeDecodeError:
    raise ValueError(f"{flag}={path} is not UTF-8 text.") from None
  if not any(map(text_lines.has_visible_text, sentences)):
    raise ValueError(f"{flag}={path} holds no sentence.")
  return sentences


def check_output(path: str, overwrite: bool) -> None:
  if not path:
    raise ValueError("--output is required: the .tsv file of mined pairs.")
  if os.path.isdir(path):
    raise ValueError(f"--output={path} is a directory; name a file.")
  if os.path.lexists(path) and not overwrite:
    raise FileExistsError(f"{path} already exists; pass --overwrite to "
                          "replace it.")
  folder = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(folder):
    raise FileNotFoundError(f"--output={path}: the folder {folder} does not "
                            "exist.")


def _side(name: str, text: Optional[str], embeddings: Optional[str]):
  """(sentences or None, embeddings or None) of one side, checked."""
  if not text and not embeddings:
    raise ValueError(f"Give --{name} (a .txt file of sentences) or "
                     f"--{name}_embeddings (a .npy file).")
  sentences = read_sentences(text, f"--{name}") if text else None
  array = None
  if embeddings:
    array = nearest_neighbours.read_embeddings(embeddings,
                                               f"--{name}_embeddings")
    if sentences is not None and len(sentences) != len(array):
      raise ValueError(f"--{name}={text} holds {len(sentences)} sentences but "
                       f"--{name}_embeddings={embeddings} {len(array)} rows.")
  return sentences, array


def write_pairs(path: str, pairs: bitext_mining.MinedPairs,
                source_sentences: Optional[List[str]] = None,
                target_sentences: Optional[List[str]] = None) -> None:
  """`score<TAB>source<TAB>target` a line, best first, atomically; the
  sentences (tabs in them written as spaces) or, without them, the rows."""
  def cell(sentences, row):
    if sentences is None:
      return str(row)
    return sentences[row].replace("\t", " ")
  with atomic_file.atomic_file(path) as temporary:
    with open(temporary, "w", encoding="utf-8") as f:
      for i, j, score in zip(pairs.source.tolist(), pairs.target.tolist(),
                             pairs.scores.tolist()):
        f.write(f"{score:.6f}\t{cell(source_sentences, i)}\t"
                f"{cell(target_sentences, j)}\n")


def mine_files(output: str, source: Optional[str] = None,
               target: Optional[str] = None,
               source_embeddings: Optional[str] = None,
               target_embeddings: Optional[str] = None,
               model: Optional[str] = None, batch_size: int = 256,
               overwrite: bool = False, show_progress: bool = True,
               open_client: Optional[Callable[[], ContextManager]] = None,
               encode_shard_size: int = dask_encoding.SHARD_SIZE,
               **mine_args) -> Dict[str, object]:
  """Mines the two sides into `output` (see the module docstring);
  `mine_args` go to `bitext_mining.mine`. Returns its result.
  `open_client()`, entered once every input is checked, gives the
  dask.distributed client the encoding (shards of `encode_shard_size`
  sentences) and the search run on (`dask_encoding`, `dask_mining`)."""
  check_output(output, overwrite)
  source_sentences, source_array = _side("source", source, source_embeddings)
  target_sentences, target_array = _side("target", target, target_embeddings)
  needs_model = source_array is None or target_array is None
  if needs_model and not model:
    raise ValueError("--model is required to encode --source / --target "
                     "sentences (or give their --*_embeddings).")
  if needs_model:  # before a cluster starts, or a side is encoded
    input_paths.check_model(model)
  _check_fits(source_array if source_array is not None else source_sentences,
              target_array if target_array is not None else target_sentences,
              mine_args)
  with contextlib.ExitStack() as stack:
    scratch = stack.enter_context(tempfile.TemporaryDirectory(
        prefix="cmlm-mine-"))
    client = stack.enter_context(open_client()) if open_client else None
    encode = functools.partial(
        _encode, model=model, batch_size=batch_size, client=client,
        shard_size=encode_shard_size, show_progress=show_progress)
    if source_array is None:
      source_array = encode("source", source, source_sentences,
                            os.path.join(scratch, "source.npy"))
    if target_array is None:
      target_array = encode("target", target, target_sentences,
                            os.path.join(scratch, "target.npy"))
    result = bitext_mining.mine(source_array, target_array,
                                show_progress=show_progress, client=client,
                                **mine_args)
    write_pairs(output, result["pairs"], source_sentences, target_sentences)
    del source_array, target_array  # the memory maps, before scratch goes
  return result


def _encode(name: str, text: str, sentences: List[str], path: str,
            model: str, batch_size: int, client, shard_size: int,
            show_progress: bool) -> np.ndarray:
  """The side `name`'s sentences encoded into the .npy `path` (in this
  process, or on the Dask `client`'s workers), memory-mapped."""
  if client is None:
    from cmlm.inference import encode_files  # pylint: disable=g-import-not-at-top
    if show_progress:
      print(f"Encoding --{name}={text}...", file=sys.stderr, flush=True)
    encode_files.encode_file(model, text, path, batch_size=batch_size,
                             show_progress=show_progress)
  else:
    if show_progress:
      print(f"Encoding {len(sentences)} sentences of --{name}={text} on the "
            f"Dask cluster, shards of {shard_size}, batches of "
            f"{batch_size}.", file=sys.stderr, flush=True)
    progress = progress_lib.Progress(len(sentences), enabled=show_progress)
    dask_encoding.encode(client, model, sentences, path, shard_size,
                         batch_size, on_progress=progress.update)
    progress.close()
  return nearest_neighbours.read_embeddings(path, f"--{name}")


def _check_fits(source, target, mine_args) -> None:
  """The dimensions agree (embeddings on both sides) and the index and k fit
  both sides (sentences or embeddings): said before any encoding."""
  if isinstance(source, np.ndarray) and isinstance(target, np.ndarray) and (
      source.shape[1] != target.shape[1]):
    raise ValueError(f"--source_embeddings have {source.shape[1]} dimensions "
                     f"and --target_embeddings {target.shape[1]}; mine two "
                     "corpora encoded by the same model.")
  if mine_args.get("k", 4) < 1:
    raise ValueError(f"--k must be 1 or more, got {mine_args['k']}.")
  nearest_neighbours.check_index(
      mine_args.get("config", nearest_neighbours.IndexConfig()),
      min(len(source), len(target)), mine_args.get("key_shard_size"))
