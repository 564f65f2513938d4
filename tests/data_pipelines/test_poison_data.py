"""Poison data, property-based: arbitrary Unicode, empty and huge lines,
bytes that are not UTF-8 and NUL characters.

The corpus reader, the sentence splitter, the CMLM input pipeline and the
exported preprocessor must neither crash nor hang on them (every property is
bounded by `max_examples` and a deadline, and keeps no example database).
Lines that are not UTF-8 are skipped and counted with `skip_invalid_lines`,
and fail the run naming the line without it; the preprocessor never drops a
record: one row per input.
"""
import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import tensorflow as tf

from cmlm.data_pipelines import cmlm_dataloader
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import sentence_splitter
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from cmlm.experiments import cmlm_experiments
from cmlm.export import preprocessor as preprocessor_lib

VOCAB = cmlm_experiments.EMBEDDED_VOCAB
HUGE = 100_000  # characters in a huge line
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=80)
LINES = st.one_of(
    TEXT.map(lambda text: text.encode("utf-8")),  # NUL included
    st.just(b""),
    st.binary(max_size=40),  # mostly not UTF-8
    st.sampled_from(["Mr. A ", ".", "word ", "\u00e9\u0301", "\0", "Ab. "]).map(
        lambda piece: (piece * (HUGE // len(piece))).encode("utf-8")),
    st.just("The cat sat. It slept. A dog came.".encode("utf-8")))
FILES = st.lists(LINES.map(lambda line: line.replace(b"\n", b"")),
                 min_size=1, max_size=12)


def invalid_lines(lines):
  """How many lines of the file `write(lines)` makes the reader cannot decode
  (utf-8-sig on the first). LF, CRLF and CR all end a line, so a written line
  holding a CR is two lines of the file."""
  count = 0
  for number, line in enumerate(b"\n".join(lines).splitlines()):
    try:
      line.decode("utf-8-sig" if number == 0 else "utf-8")
    except UnicodeDecodeError:
      count += 1
  return count


def write(tmp_path_factory, lines):
  path = tmp_path_factory.mktemp("poison") / "corpus.txt"
  path.write_bytes(b"\n".join(lines))
  return str(path)


@hypothesis.settings(max_examples=60, deadline=10_000, database=None)
@hypothesis.given(lines=FILES)
@hypothesis.example(lines=[b"\x80\r\x80"])  # a CR ends a line too
def test_the_reader_skips_and_counts_lines_that_are_not_utf8(
    tmp_path_factory, lines):
  path = write(tmp_path_factory, lines)
  stats = corpus.CorpusStats()
  try:
    pairs = list(corpus.sentence_pairs(corpus.sentence_documents(
        corpus.read_documents(path, stats=stats, skip_invalid_lines=True),
        stats), stats))
  except corpus.CorpusError as error:
    assert "contains no text" in str(error)
    pairs = []
  assert stats.skipped_invalid_lines == invalid_lines(lines)
  assert len(pairs) == stats.pairs
  for s1, s2 in pairs:
    assert s1 and s2 and "\n" not in s1 + s2
  if invalid_lines(lines):
    with pytest.raises(corpus.CorpusError, match="is not UTF-8 text"):
      list(corpus.read_documents(path))


@hypothesis.settings(max_examples=100, deadline=5_000, database=None)
@hypothesis.given(text=st.one_of(TEXT, LINES.map(
    lambda line: line.decode("utf-8", "replace"))))
def test_the_sentence_splitter_loses_no_text(text):
  sentences = sentence_splitter.split_sentences(text)
  assert " ".join(sentences) == sentence_splitter.normalize_whitespace(text)
  assert all(sentences)


@hypothesis.settings(max_examples=4, deadline=60_000, database=None)
@hypothesis.given(lines=FILES)
def test_the_input_pipeline_turns_every_pair_into_a_valid_example(
    tmp_path_factory, lines):
  lines = lines + [b"", b"One pair. Is here."]  # at least one pair
  seq_length, predictions = 16, 4
  data = cmlm_dataloader.CmlmDataConfig(
      input_path=write(tmp_path_factory, lines),
      max_predictions_per_seq=predictions,
      global_batch_size=4, is_training=False, drop_remainder=False, seed=1,
      skip_invalid_lines=True)
  loader = cmlm_dataloader.CmlmDataLoader(
      data, tokenization.TokenizationConfig(vocab_file=VOCAB,
                                            seq_length=seq_length))
  examples = 0
  for batch in loader.load():
    ids = batch["s2_input_word_ids"].numpy()
    assert ids.shape[1] == seq_length
    assert (ids >= 0).all() and (ids < vocabulary_size()).all()
    assert batch["masked_lm_positions"].shape[1] == predictions
    examples += ids.shape[0]
  assert examples == loader.corpus_stats.pairs
  assert loader.corpus_stats.skipped_invalid_lines == invalid_lines(lines)


def vocabulary_size():
  return len(vocabulary.load_vocab(VOCAB))


@pytest.fixture(scope="module")
def exported_preprocessor(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("preprocessor"))
  preprocessor_lib.save_preprocessor(
      preprocessor_lib.Preprocessor(VOCAB, True, seq_length=16), path)
  return tf.saved_model.load(path)


@hypothesis.settings(max_examples=25, deadline=30_000, database=None,
                     suppress_health_check=[
                         hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(records=st.lists(LINES, min_size=1, max_size=8))
def test_the_exported_preprocessor_gives_one_row_per_record(
    exported_preprocessor, records):
  outputs = exported_preprocessor(tf.constant(records))
  ids = outputs["input_word_ids"].numpy()
  mask = outputs["input_mask"].numpy()
  assert ids.shape == (len(records), 16)
  assert (ids[:, 0] == 2).all()  # [CLS]
  lengths = mask.sum(axis=1)
  assert (lengths >= 2).all()
  assert (ids[np.arange(len(records)), lengths - 1] == 3).all()  # [SEP]
  assert ((ids >= 0) & (ids < vocabulary_size())).all()
