"""`cmlm.mteb_model(path)`: any model of the garden as an MTEB 2 model.

    import mteb
    import cmlm
    model = cmlm.mteb_model("exports/tiny")         # any --model kind
    results = mteb.evaluate(model, tasks=mteb.get_tasks(tasks=["STSBenchmark"]))

MTEB 2's `mteb.evaluate` takes a model that describes itself
(`mteb_model_meta`, an `mteb.models.ModelMeta`) and scores pairs with its
`similarity` and `similarity_pairwise` (MTEB's `EncoderProtocol`).
`MtebSentenceEncoder` is `cmlm.SentenceEncoder`, whose `encode` already
takes MTEB's DataLoader of `{"text": [...]}` batches and its keywords, with
those three added. Similarity is the cosine, as the garden's training and
evaluation use it.

The metadata is read from the model, never invented (`model_facts`):

  * an export of `python -m cmlm export` (or one of its SavedModels): its
    `export_info.json` gives `name` (`--model_name` when it names an owner,
    `me/cmlm-en-base`, else `local/` and the name or the run's name),
    `revision` (the export's unique id), `release_date`, `license`,
    `languages` (ISO 639 codes as MTEB's `eng-Latn`), `max_tokens` (the
    training sequence length), `n_parameters` (the encoder's, without the
    training heads) and, for an import, `adapted_from` and `reference`;
  * a training run: its name, the checkpoint (`ckpt-N`) as the revision,
    its config's sequence length, the parameters of its `encoder`
    checkpoint item, and what the run says of its license and languages
    (`inference.run_facts`, as the model card says them), from the run
    `SentenceEncoder` read (`inference.run_record`: params.yaml once);
  * any other SavedModel: its directory's name; the rest is None.

`embed_dim` is the embeddings' size, `framework` TensorFlow. Keyword
arguments of `mteb_model` replace any field: `mteb_model(path,
name="me/cmlm-en-base", license="apache-2.0")`. mteb is not a dependency of
the garden (`pip install mteb`; requirements-test.txt pins the version the
tests run); it is imported when the metadata is first asked for.
"""
import os
from typing import Dict, Optional, Union

import numpy as np

from cmlm.inference import layout
from cmlm.inference import run_facts
from cmlm.inference import run_record
from cmlm.modeling import vectors
from cmlm.sentence_encoder import SentenceEncoder

SIMILARITY = "cosine"
# MTEB names a model "owner/name": a name stated without an owner (or the
# run's name) goes under this one.
LOCAL_OWNER = "local"
FRAMEWORK = "TensorFlow"
# What the sentence vector uses of a checkpoint: the `encoder` item but
# CMLM's projection head P (training only; not exported).
_ENCODER_ITEM = "encoder"
_TRAINING_ONLY = ("projection_head",)


def mteb_model(model, checkpoint: Optional[str] = None,
               backend: Optional[str] = None, quantized: bool = False,
               **meta) -> "MtebSentenceEncoder":
  """`model` (any `SentenceEncoder` kind; `backend` and `quantized` as it
  takes them) as an MTEB 2 model; `meta` replaces fields of its
  `ModelMeta` (see the module docstring).

  Examples:
    >>> import mteb
    >>> model = mteb_model("runs/demo/export", name="me/cmlm-demo")
    >>> results = mteb.evaluate(model, tasks=mteb.get_tasks(
    ...     tasks=["STSBenchmark"]))
  """
  return MtebSentenceEncoder(model, checkpoint, backend, quantized, **meta)


class MtebSentenceEncoder(SentenceEncoder):
  """`SentenceEncoder` with MTEB 2's `mteb_model_meta`, `similarity` and
  `similarity_pairwise` (`mteb.evaluate(model, tasks=...)`).

  Args:
    model, checkpoint, backend, quantized: as `SentenceEncoder`.
    **meta: `ModelMeta` fields that replace what is read from the model.
  """

  similarity_fn_name = SIMILARITY

  def __init__(self, model, checkpoint: Optional[str] = None,
               backend: Optional[str] = None, quantized: bool = False,
               **meta):
    super().__init__(model, checkpoint, backend, quantized)
    self._facts = model_facts(self.run or self.model_path, checkpoint)
    self._meta_overrides = meta
    self._meta = None

  @property
  def mteb_model_meta(self):
    """The `mteb.models.ModelMeta` MTEB files its results under."""
    if self._meta is None:
      from mteb.models import ModelMeta  # pylint: disable=g-import-not-at-top
      fields = dict(
          loader=None, name=None, revision=None, release_date=None,
          languages=None, n_parameters=None, memory_usage_mb=None,
          max_tokens=None, license=None, open_weights=True,
          public_training_code=None, public_training_data=None,
          framework=[FRAMEWORK], similarity_fn_name=SIMILARITY,
          use_instructions=False, training_datasets=None,
          embed_dim=self.get_sentence_embedding_dimension())
      fields.update(_mteb_fields(self._facts))
      fields.update(self._meta_overrides)
      self._meta = ModelMeta(**fields)
    return self._meta

  def similarity(self, embeddings1, embeddings2) -> np.ndarray:
    """Cosine similarity of every pair: `[n1, n2]` (a `[dim]` vector counts
    as one row), as `SentenceTransformer.similarity`."""
    return cosine_similarity(embeddings1, embeddings2)

  def similarity_pairwise(self, embeddings1, embeddings2) -> np.ndarray:
    """Cosine similarity of row i with row i: `[n]`."""
    return pairwise_cosine_similarity(embeddings1, embeddings2)


def _rows(embeddings) -> np.ndarray:
  """float32 `[n, dim]` of a NumPy array or a (CPU) torch tensor."""
  array = np.asarray(embeddings, np.float32)
  return array[np.newaxis] if array.ndim == 1 else array


def cosine_similarity(embeddings1, embeddings2) -> np.ndarray:
  """`[n1, n2]` cosines; an all-zero row has cosine 0 with everything."""
  return vectors.cosine_similarity(_rows(embeddings1), _rows(embeddings2))


def pairwise_cosine_similarity(embeddings1, embeddings2) -> np.ndarray:
  """`[n]` cosines of row i of each with row i of the other."""
  first, second = _rows(embeddings1), _rows(embeddings2)
  if first.shape != second.shape:
    raise ValueError(f"similarity_pairwise needs two arrays of one shape, got "
                     f"{first.shape} and {second.shape}.")
  return vectors.paired_cosine_similarity(first, second)


def model_facts(model: Union[str, run_record.RunRecord],
                checkpoint: Optional[str] = None) -> Dict:
  """What a model says of itself, by the names `export_info.json` uses
  (`model_name`, `id`, `exported_at`, `license`, `language`, `seq_length`,
  `n_parameters`, `origin`, `origin_url`); {} when nothing is recorded.
  `model` is a path, or a training run as already read."""
  if isinstance(model, run_record.RunRecord):
    return _run_facts(model)
  model = os.fspath(model)
  if run_record.is_run(model):
    return _run_facts(run_record.read_run(model, checkpoint,
                                          find_report=False))
  path = model.split(",")[0]
  name = os.path.basename(os.path.abspath(path).rstrip(os.sep))
  for saved_model in _saved_models(path):
    info = layout.read_info(saved_model)
    if info:
      return dict({"model_name": name}, **info)
  return {"model_name": name}


def _saved_models(path: str):
  """The SavedModels whose `export_info.json` speaks for `path`: the
  export's parts, the path itself, a TF Serving base's highest version."""
  resolved = layout.resolve(path) if os.path.isdir(path) else path
  yield from (os.path.join(resolved, part) for part in layout.PARTS)
  yield resolved
  for base in (resolved, os.path.join(resolved, "serving")):
    versions = [n for n in (os.listdir(base) if os.path.isdir(base) else [])
                if n.isdigit()]
    if versions:
      yield os.path.join(base, max(versions, key=int))


def _run_facts(run: run_record.RunRecord) -> Dict:
  """A training run's facts: its name, checkpoint, length, parameters and
  what it says of its license and languages (`inference.run_facts`)."""
  origin = run.origin or {}
  return dict(model_name=run_facts.run_name(run),
              id=run_facts.name_in_run(run.checkpoint_path, run.model_dir),
              license=run_facts.default_license(run),
              language=run_facts.languages(run)[0],
              seq_length=run.tokenization.seq_length,
              n_parameters=encoder_parameters(run.checkpoint_path),
              origin=origin.get("source_name", ""),
              origin_url=origin.get("url", ""))


def encoder_parameters(checkpoint_path: str) -> int:
  """The parameters of a checkpoint's `encoder` item that the sentence
  vector uses: every variable the checkpoint's object graph reaches from
  `encoder` (the word embeddings included, which the CMLM head shares and
  under whose name they may be saved), but CMLM's projection head P."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.core.protobuf import trackable_object_graph_pb2  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(checkpoint_path)
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
  children = lambda node_id, names: [
      child.node_id for child in graph.nodes[node_id].children
      if child.local_name in names]
  encoder = children(0, (_ENCODER_ITEM,))
  training_only = _reachable(graph, [node for item in encoder for node in
                                     children(item, _TRAINING_ONLY)])
  shapes = reader.get_variable_to_shape_map()
  keys = {attribute.checkpoint_key
          for node in _reachable(graph, encoder, blocked=training_only)
          for attribute in graph.nodes[node].attributes
          if attribute.name == "VARIABLE_VALUE"}
  return int(sum(np.prod(shapes[key], dtype=np.int64) for key in keys))


def _reachable(graph, starts, blocked=frozenset()):
  """The ids of the object graph's nodes reachable from `starts`, not
  through `blocked`."""
  seen, stack = set(), list(starts)
  while stack:
    node = stack.pop()
    if node not in seen and node not in blocked:
      seen.add(node)
      stack.extend(child.node_id for child in graph.nodes[node].children)
  return seen


def _mteb_fields(facts: Dict) -> Dict:
  """`model_facts` as `ModelMeta` fields (only those it records)."""
  from mteb.types import Licenses  # pylint: disable=g-import-not-at-top
  import typing  # pylint: disable=g-import-not-at-top
  name = facts.get("model_name") or ""
  fields = {"name": (name if "/" in name else f"{LOCAL_OWNER}/{name}"
                     if name else None),
            "revision": facts.get("id") or None,
            "max_tokens": facts.get("seq_length"),
            "n_parameters": facts.get("n_parameters")}
  if facts.get("exported_at"):
    fields["release_date"] = facts["exported_at"][:10]
  if facts.get("license") in typing.get_args(Licenses):
    fields["license"] = facts["license"]
  languages = facts.get("language")
  if languages:
    fields["languages"] = _iso_language_scripts(languages)
  if facts.get("origin"):
    fields["adapted_from"] = facts["origin"]
  if str(facts.get("origin_url", "")).startswith(("https://", "http://")):
    fields["reference"] = facts["origin_url"]
  return fields


def _iso_language_scripts(languages):
  """ISO 639 codes (`en`, `deu`) as MTEB's language-script codes
  (`eng-Latn`), by MTEB's own table for Hugging Face cards; None for
  "multilingual" alone."""
  from mteb.languages import iso_mappings  # pylint: disable=g-import-not-at-top
  return iso_mappings._hf_langs_to_iso_lang_scripts(list(languages))  # pylint: disable=protected-access
