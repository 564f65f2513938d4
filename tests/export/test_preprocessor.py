"""The preprocessor SavedModel: the training tokens, TF-Hub's packing."""
import numpy as np
import pytest

import cmlm.export  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf
import tensorflow_text as tf_text

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import tokenization
from cmlm.experiments import cmlm_experiments
from cmlm.export import preprocessor as preprocessor_lib
from official.nlp.modeling import layers
from official.nlp.tools import export_tfhub_lib
from tests.export import export_helpers as export_helpers

VOCAB = cmlm_experiments.EMBEDDED_VOCAB
SEQ_LENGTH = 24


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
  """The preprocessor of the embedded vocabulary, saved and loaded back."""
  path = str(tmp_path_factory.mktemp("preprocessor") / "saved")
  preprocessor_lib.save_preprocessor(
      preprocessor_lib.Preprocessor(VOCAB, True, SEQ_LENGTH), path)
  return tf.saved_model.load(path)


def _corpus_sentences(count=300):
  documents = corpus.read_documents(cmlm_experiments.EMBEDDED_CORPUS,
                                    split="all")
  sentences = [s for document in corpus.sentence_documents(documents)
               for s in document]
  return sentences[::max(1, len(sentences) // count)][:count]


def test_token_ids_equal_the_training_pipeline(loaded):
  sentences = tf.constant(_corpus_sentences() +
                          export_helpers.AWKWARD_SENTENCES)
  training = tokenization.WordPieceTokenizer(VOCAB, SEQ_LENGTH)
  expected = training.tokenize_and_pack(sentences)
  actual = loaded(sentences)
  for key in ("input_word_ids", "input_mask", "input_type_ids"):
    np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)
  assert actual["input_word_ids"].dtype == tf.int32


def test_tokenize_keeps_words_and_pieces_apart(loaded):
  tokens = loaded.tokenize(tf.constant(["Elizabeth's unpardonable pride"]))
  assert tokens.shape.rank == 3  # [batch, (words), (pieces)]
  assert tokens.dtype == tf.int32
  training = tokenization.WordPieceTokenizer(VOCAB, SEQ_LENGTH)
  np.testing.assert_array_equal(
      tokens.merge_dims(1, -1).to_list(),
      training.tokenize(tf.constant(["Elizabeth's unpardonable pride"]))
      .to_list())


def test_casing_vocabulary_and_special_tokens_are_recorded(loaded):
  assert bool(loaded.do_lower_case.numpy())
  assert loaded.vocab_file.asset_path.numpy().decode().endswith(
      "vocab_en_uncased.txt")
  special = {k: int(v) for k, v in
             loaded.tokenize.get_special_tokens_dict().items()}
  assert special == dict(vocab_size=cmlm_experiments.vocab_size_of(VOCAB),
                         start_of_sequence_id=2, end_of_segment_id=3,
                         padding_id=0, mask_id=4)


@pytest.mark.parametrize("seq_length", [5, 12, 64])
def test_bert_pack_inputs_equals_model_gardens_for_one_or_two_segments(
    loaded, seq_length):
  first = loaded.tokenize(tf.constant(_corpus_sentences(8)))
  second = loaded.tokenize(tf.constant(_corpus_sentences(8)[::-1]))
  for segments in ([first], [first, second],
                   [first.merge_dims(1, -1), second.merge_dims(1, -1)]):
    expected = layers.BertPackInputs.bert_pack_inputs(
        segments, seq_length, start_of_sequence_id=2, end_of_segment_id=3,
        padding_id=0)
    actual = loaded.bert_pack_inputs(segments,
                                     seq_length=tf.constant(seq_length))
    for key in expected:
      np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)


def test_packing_equals_tf_text_s_trimmer_and_combiner_without_their_ops():
  """`pack_segments` against TF Text's `RoundRobinTrimmer`, then
  `combine_segments` and `pad_model_inputs`, on random segments (empty ones
  and budgets of 0 included)."""
  rng = np.random.default_rng(0)
  for _ in range(100):
    batch = int(rng.integers(1, 4))
    segments = [tf.ragged.constant(
        [list(rng.integers(5, 99, rng.integers(0, 12))) for _ in range(batch)],
        dtype=tf.int32, ragged_rank=1) for _ in range(rng.integers(1, 3))]
    budget = int(rng.integers(0, 20))
    seq_length = budget + len(segments) + 1
    trimmed = tf_text.RoundRobinTrimmer(budget).trim(segments)
    assert [t.row_lengths().numpy().tolist() for t in trimmed] == [
        length.numpy().tolist() for length in tokenization.round_robin_lengths(
            [s.row_lengths() for s in segments], budget)]
    combined, type_ids = tf_text.combine_segments(
        trimmed, start_of_sequence_id=2, end_of_segment_id=3)
    word_ids, mask = tf_text.pad_model_inputs(combined, seq_length,
                                              pad_value=0)
    type_ids, _ = tf_text.pad_model_inputs(type_ids, seq_length)
    packed = tokenization.pack_segments(segments, seq_length, 2, 3, 0)
    np.testing.assert_array_equal(packed["input_word_ids"], word_ids)
    np.testing.assert_array_equal(packed["input_mask"], mask)
    np.testing.assert_array_equal(packed["input_type_ids"], type_ids)


def test_seq_length_too_short_for_the_special_tokens_is_refused(loaded):
  tokens = loaded.tokenize(tf.constant(["a b"]))
  with pytest.raises(tf.errors.InvalidArgumentError, match="seq_length"):
    loaded.bert_pack_inputs([tokens, tokens], seq_length=tf.constant(2))
  with pytest.raises(ValueError, match="seq_length=2"):
    preprocessor_lib.Preprocessor(VOCAB, True, 2)


@pytest.mark.slow
def test_interchangeable_with_model_gardens_bert_preprocessor(loaded, tmp_path):
  """Model Garden's export_tfhub_lib preprocessor agrees with ours."""
  path = str(tmp_path / "model_garden")
  export_tfhub_lib.export_preprocessing(
      path, vocab_file=VOCAB, do_lower_case=True, tokenize_with_offsets=False,
      default_seq_length=SEQ_LENGTH)
  theirs = tf.saved_model.load(path)
  sentences = tf.constant(_corpus_sentences(50) +
                          export_helpers.AWKWARD_SENTENCES)
  for key, value in theirs(sentences).items():
    np.testing.assert_array_equal(loaded(sentences)[key], value, err_msg=key)
  assert (loaded.tokenize(sentences).to_list() ==
          theirs.tokenize(sentences).to_list())
  segments = [theirs.tokenize(sentences), theirs.tokenize(sentences[::-1])]
  ours = loaded.bert_pack_inputs(segments, seq_length=tf.constant(40))
  for key, value in theirs.bert_pack_inputs(
      segments, seq_length=tf.constant(40)).items():
    np.testing.assert_array_equal(ours[key], value, err_msg=key)
