"""Principal component removal against language bias (paper section 5.2).

For each language, the first principal component c of a sample of its
sentences' embeddings M `[n, dim]` is fitted: as the paper defines it, the
first right singular vector of M itself, not centred, so the direction that
the language's sentences share (its mean offset, the "language identity")
is what goes. Before similarity, an embedding e of that language loses its
projection on c (a unit vector): e' = e - (e . c) c, orthogonal to c. (The
paper's formula divides by ||e|| instead of projecting; cosine similarity,
which follows, is what it is for, and e' is the removal it describes.)

`LanguageComponents` holds the fitted components and saves them as JSON next
to a model; `PrincipalComponentRemoval` applies them in-graph (a `tf.Module`
the text-to-embedding export carries for serving with a language code).
"""
import dataclasses
import json
import os
from typing import Dict, List, Mapping

import numpy as np
import tensorflow as tf

from cmlm.data_pipelines import atomic_file

FILE_NAME = "pcr_components.json"


def first_principal_component(embeddings: np.ndarray) -> np.ndarray:
  """The first right singular vector of `[n, dim]` embeddings (section 5.2),
  uncentred, as a unit vector `[dim]`."""
  embeddings = np.asarray(embeddings, np.float64)
  if embeddings.ndim != 2 or len(embeddings) < 2:
    raise ValueError("Fitting a principal component needs at least 2 "
                     f"embeddings, got an array of shape {embeddings.shape}.")
  _, _, right = np.linalg.svd(embeddings, full_matrices=False)
  return right[0] / np.linalg.norm(right[0])


def remove_component(embeddings, component):
  """e - (e . c) c for each row e; works on numpy arrays and tensors."""
  if isinstance(embeddings, np.ndarray):
    return embeddings - np.outer(embeddings @ component, component)
  projection = tf.reduce_sum(embeddings * component, axis=-1, keepdims=True)
  return embeddings - projection * component


@dataclasses.dataclass
class LanguageComponents:
  """Each language's first principal component, `[num_languages, dim]`."""
  languages: List[str]
  components: np.ndarray

  @classmethod
  def fit(cls, embeddings_by_language: Mapping[str, np.ndarray]
          ) -> "LanguageComponents":
    languages = sorted(embeddings_by_language)
    return cls(languages, np.stack([
        first_principal_component(embeddings_by_language[lang])
        for lang in languages]).astype(np.float32))

  def remove(self, embeddings: np.ndarray, language: str) -> np.ndarray:
    if language not in self.languages:
      raise ValueError(f"No principal component was fitted for language "
                       f"{language!r}; fitted: {', '.join(self.languages)}.")
    return remove_component(embeddings,
                            self.components[self.languages.index(language)])

  def save(self, directory: str) -> str:
    path = os.path.join(directory, FILE_NAME)
    # Whole or not at all: a failed write (a full disk) leaves nothing.
    with atomic_file.atomic_file(path) as temporary:
      with open(temporary, "w", encoding="utf-8") as f:
        json.dump({lang: vector.tolist() for lang, vector
                   in zip(self.languages, self.components)}, f)
    return path

  @classmethod
  def load(cls, directory_or_file: str) -> "LanguageComponents":
    path = directory_or_file
    if os.path.isdir(path):
      path = os.path.join(path, FILE_NAME)
    try:
      with open(path, encoding="utf-8") as f:
        data: Dict[str, List[float]] = json.load(f)
    except FileNotFoundError:
      raise FileNotFoundError(f"No principal components at {path}; fit them "
                              "with `python -m cmlm pcr`.") from None
    except json.JSONDecodeError as e:
      raise ValueError(f"{path} is not a components JSON file: {e}.") from None
    languages = sorted(data)
    return cls(languages, np.array([data[lang] for lang in languages],
                                   np.float32))


class PrincipalComponentRemoval(tf.Module):
  """In-graph removal of a language's component, chosen by language code.

  Call with embeddings `[batch, dim]` and language codes `[batch]` (strings).
  A code without a fitted component (e.g. "") leaves its embedding unchanged.
  """

  def __init__(self, components: LanguageComponents, name=None):
    super().__init__(name=name)
    self.languages = tf.constant(components.languages)
    # Row 0 is the zero vector: no removal for unknown codes.
    self.components = tf.Variable(
        np.concatenate([np.zeros_like(components.components[:1]),
                        components.components]), trainable=False,
        name="components")
    self.table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            self.languages, tf.range(1, len(components.languages) + 1,
                                     dtype=tf.int64)), default_value=0)

  def __call__(self, embeddings, languages):
    # [batch, dim]
    components = tf.gather(self.components, self.table.lookup(languages))
    return remove_component(embeddings, tf.cast(components, embeddings.dtype))
