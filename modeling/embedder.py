"""Sentences to embeddings, as one object, whatever computes them.

`Embedder` is what every consumer of embeddings takes (encode, eval, pcr,
the demo, best-checkpoint selection, `cmlm.SentenceEncoder`): one batch with
`embedder(sentences)`, any number with `embedder.embed(sentences,
batch_size)`. `encoder_embedder` makes one from an encoder in memory;
`cmlm.inference.embedders.load_embedder` from any saved model.
"""
from typing import Callable, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from cmlm.data_pipelines import tokenization as tokenization_lib
from cmlm.data_pipelines.tokenization import STRING_BATCH
from cmlm.modeling import length_chunks

# Sentences tokenized at once to count their tokens before batching.
LENGTH_BATCH = 4096


class Embedder:
  """Sentences to embeddings with one loaded model.

  `embedder(sentences)` embeds one batch; `embedder.embed(sentences,
  batch_size)` any number (see `embed`).

  Attributes:
    token_lengths: strings `[batch]` -> int `[batch]`, the tokens each
      sentence fills, when the model can count them (else None: `embed`
      orders by characters); a `tf.string` tensor in, or, with
      `lengths_take_text`, a list of Python strings (a model run outside
      TensorFlow).
    normalizes_in_graph: the model L2-normalises its embeddings itself (our
      serving model exported with `--normalize`).
    tokenization: a training run's `task.tokenization` (None otherwise).
    checkpoint_path: a training run's checkpoint (None otherwise).
    backend: what computes the embeddings, in words ("saved_model", or
      an export's artifact: "tflite float32", "onnx int8").
  """

  def __init__(self, embed_batch: Callable[[List[str]], np.ndarray],
               token_lengths=None, normalizes_in_graph: bool = False,
               tokenization=None, checkpoint_path: Optional[str] = None,
               keep_alive=None, lengths_take_text: bool = False):
    self._embed_batch = embed_batch
    self.token_lengths = token_lengths
    self._lengths_take_text = lengths_take_text
    self.normalizes_in_graph = normalizes_in_graph
    self.tokenization = tokenization
    self.checkpoint_path = checkpoint_path
    self._keep_alive = keep_alive  # loaded SavedModels: their variables
    self._dimension = None
    self.backend = "saved_model"

  def __call__(self, sentences: Sequence[str]) -> np.ndarray:
    """One batch: float32 `[len(sentences), dim]`."""
    sentences = list(sentences)
    embeddings = np.asarray(self._embed_batch(sentences), np.float32)
    if embeddings.ndim != 2 or len(embeddings) != len(sentences):
      raise ValueError(f"The encoder returned shape {embeddings.shape} for "
                       f"{len(sentences)} sentences; expected "
                       "[sentences, dim].")
    self._dimension = embeddings.shape[1]
    return embeddings

  @property
  def dimension(self) -> int:
    """The size of the embeddings."""
    if self._dimension is None:
      self(["a"])
    return self._dimension

  def lengths(self, sentences: Sequence[str]) -> np.ndarray:
    """How long each sentence is for this model: its tokens where the model
    counts them (`token_lengths`), else its characters."""
    if self.token_lengths is None:
      return np.array([len(s) for s in sentences], np.int64)
    if self._lengths_take_text:
      return np.asarray(self.token_lengths(list(sentences)), np.int64)
    return np.concatenate(
        [np.asarray(self.token_lengths(tf.constant(
            list(sentences[start:start + LENGTH_BATCH]), tf.string)))
         for start in range(0, len(sentences), LENGTH_BATCH)] or [[]]
    ).astype(np.int64)

  def embed(self, sentences: Sequence[str], batch_size: int = 32,
            on_batch: Callable[[int], None] = lambda size: None,
            lengths: Optional[np.ndarray] = None) -> np.ndarray:
    """float32 `[len(sentences), dim]`, rows in input order.

    Batches hold sentences of one length, longest first (sentence-
    transformers' `encode` orders by characters; we order by tokens where
    the model counts them: on STS-B dev in batches of 32, 2% of the tokens
    computed are padding instead of 25%), so that a model that pads each
    batch only to its longest sentence pads little. `lengths` gives them
    instead (`lengths`); `on_batch(size)` follows progress.
    """
    if batch_size < 1:
      raise ValueError(f"batch_size must be 1 or more, got {batch_size}.")
    sentences = list(sentences)
    if not sentences:
      return np.zeros([0, self.dimension], np.float32)
    if lengths is None:
      lengths = self.lengths(sentences)
    order = np.argsort(-np.asarray(lengths), kind="stable")
    embeddings = None
    for start in range(0, len(sentences), batch_size):
      rows = order[start:start + batch_size]
      batch = self([sentences[i] for i in rows])
      if embeddings is None:
        embeddings = np.empty([len(sentences), batch.shape[1]], np.float32)
      embeddings[rows] = batch
      on_batch(len(rows))
    return embeddings


def as_embedder(embed) -> Embedder:
  """`embed` itself if an `Embedder`, else a function of one batch wrapped."""
  return embed if isinstance(embed, Embedder) else Embedder(embed)


def embedding_function(encoder, tokenizer: tokenization_lib.WordPieceTokenizer
                       ) -> Callable[[tf.Tensor], tf.Tensor]:
  """One traced function: strings `[batch]` -> `encoder`'s `default`
  `[batch, dim]`, tokenized by `tokenizer`, computed as the serving model
  computes it (rows ordered by length, read in chunks cut to their longest:
  `length_chunks`)."""
  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def embed_batch(sentences):
    return length_chunks.encode_by_length(  # [batch, dim]
        lambda inputs: encoder(inputs, training=False)["default"],
        tokenizer.tokenize_and_pack(sentences))
  return embed_batch


def encoder_embedder(encoder, tokenizer: tokenization_lib.WordPieceTokenizer,
                     tokenization=None, checkpoint_path: Optional[str] = None,
                     check_first_batch: Optional[Callable[[List[str]], None]]
                     = None) -> Embedder:
  """An encoder in memory (a `SiameseEncoder`) fed `tokenizer`;
  `check_first_batch(sentences)` runs once, on the first batch."""
  embed_batch = embedding_function(encoder, tokenizer)
  checked = []

  def embed(sentences):
    if check_first_batch is not None and not checked:
      checked.append(True)
      check_first_batch(sentences)
    return embed_batch(tf.constant(sentences, tf.string)).numpy()

  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def token_lengths(sentences):
    return tf.reduce_sum(tokenizer.tokenize_and_pack(sentences)["input_mask"],
                         axis=1)

  return Embedder(embed, token_lengths=token_lengths,
                  tokenization=tokenization, checkpoint_path=checkpoint_path,
                  keep_alive=encoder)
