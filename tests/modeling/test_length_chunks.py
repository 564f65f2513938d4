"""Length-ordered chunks (`modeling.length_chunks.encode_by_length`)."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.modeling import length_chunks


def _inputs(lengths, width):
  """Encoder inputs whose row i has `lengths[i]` real tokens of id i + 1."""
  mask = np.array([[1] * n + [0] * (width - n) for n in lengths], np.int32)
  ids = mask * np.arange(1, len(lengths) + 1, dtype=np.int32)[:, None]
  return dict(input_word_ids=tf.constant(ids), input_mask=tf.constant(mask),
              input_type_ids=tf.zeros_like(ids))


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 32])
def test_rows_come_back_in_input_order_from_chunks_cut_to_their_longest(
    chunk_size):
  lengths = [3, 9, 1, 9, 5, 2, 7]
  widths = []

  def encode_chunk(chunk):
    # [rows, 2]: the row's id (so the order shows) and its chunk's width
    widths.append(int(tf.shape(chunk["input_word_ids"])[1]))
    first = tf.cast(chunk["input_word_ids"][:, 0], tf.float32)
    width = tf.cast(tf.shape(chunk["input_mask"])[1], tf.float32)
    return tf.stack([first, tf.fill(tf.shape(first), width)], axis=1)

  embeddings = length_chunks.encode_by_length(
      encode_chunk, _inputs(lengths, width=12), chunk_size=chunk_size).numpy()
  np.testing.assert_array_equal(embeddings[:, 0], np.arange(1, 8))
  # Longest first, each chunk as wide as its longest row and no wider.
  ordered = sorted(lengths, reverse=True)
  expected = [ordered[start] for start in range(0, len(ordered), chunk_size)]
  assert widths == expected
  ranks = np.argsort(np.argsort(-np.array(lengths), kind="stable"))
  for row, length in enumerate(lengths):  # each row read in its own chunk
    assert embeddings[row, 1] == ordered[ranks[row] // chunk_size * chunk_size]
    assert embeddings[row, 1] >= length


def test_an_empty_batch_gives_no_rows():
  embeddings = tf.function(length_chunks.encode_by_length)(
      lambda chunk: tf.zeros([tf.shape(chunk["input_mask"])[0], 4]),
      {name: tf.zeros([0, 5], tf.int32) for name in
       ("input_word_ids", "input_mask", "input_type_ids")}, hidden_size=4)
  assert embeddings.shape == (0, 4)
