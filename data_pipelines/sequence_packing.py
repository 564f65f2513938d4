"""Consecutive sequences of whole sentences: the paper's data unit.

Section 3 of Yang et al. (2021): "for two consecutive sequences s1 and s2
... The length of s1 and s2 are set to be 256 tokens (the maximum length)".
As BERT's pretraining data is built, a document's sentences are packed, in
order, into sequences of at most `max_tokens` WordPiece tokens (the run's
`seq_length` - 2, leaving room for [CLS] and [SEP]); a sentence longer than
that is a sequence of its own, which the tokenizer then cuts. Each pair is
two neighbouring sequences of one document, so s1 and s2 are consecutive,
never overlap and never cross a document boundary; every sequence is s2 of
the pair before it and s1 of the pair after it, as every sentence is with
single-sentence pairs (`corpus.sentence_pairs`). A document that fits in one
sequence is cut at the sentence boundary that best balances the two halves,
so short documents (a novel's paragraphs) still give one pair.

Token counts come from the run's tokenizer (`tokenization.build_wordpiece_tokenizer`),
called on thousands of sentences at a time, so a pair's texts tokenize in the
input pipeline to exactly the counted tokens (WordPiece splits at whitespace,
so joining sentences with a space adds no token).
"""
from typing import Callable, Iterable, Iterator, List, Optional, Sequence
from typing import Tuple

import tensorflow as tf

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary

PAIR_UNITS = ('sequence', 'sentence')
# Sentences tokenized per call when counting tokens.
_COUNT_BATCH_SENTENCES = 4096

TokenCounter = Callable[[Sequence[str]], List[int]]


def check_pair_unit(pair_unit: str) -> None:
  if pair_unit not in PAIR_UNITS:
    raise ValueError(f"pair_unit={pair_unit!r} must be 'sequence' "
                     "(consecutive spans of whole sentences, the paper's "
                     "unit) or 'sentence' (single consecutive sentences).")


def token_counter(tokenization_config: tokenization.TokenizationConfig,
                  vocab: Optional[vocabulary.VocabularyFile] = None
                  ) -> TokenCounter:
  """Counts each sentence's WordPiece tokens with the run's tokenizer
  (`vocab`: its vocabulary file, already read)."""
  tokenizer = tokenization.build_wordpiece_tokenizer(
      tokenization_config, vocab=vocab)

  def count(sentences: Sequence[str]) -> List[int]:
    counts = []
    for begin in range(0, len(sentences), _COUNT_BATCH_SENTENCES):
      batch = tf.constant(list(sentences[begin:begin + _COUNT_BATCH_SENTENCES]),
                          tf.string)
      counts.extend(tokenizer.tokenize(batch).row_lengths().numpy().tolist())
    return counts
  return count


def pack_sentences(counts: Sequence[int], max_tokens: int
                   ) -> List[Tuple[int, int]]:
  """Greedy spans [begin, end) of sentences holding at most `max_tokens`.

  Every span holds at least one sentence (one longer than `max_tokens`
  stands alone). A single span of two or more sentences is cut in two at
  the boundary that best balances their tokens.
  """
  spans, begin, total = [], 0, 0
  for index, count in enumerate(counts):
    if index > begin and total + count > max_tokens:
      spans.append((begin, index))
      begin, total = index, 0
    total += count
  spans.append((begin, len(counts)))
  if len(spans) == 1 and len(counts) >= 2:
    prefix = [sum(counts[:k]) for k in range(1, len(counts))]
    cut = 1 + min(range(len(prefix)),
                  key=lambda k: abs(2 * prefix[k] - sum(counts)))
    spans = [(0, cut), (cut, len(counts))]
  return spans


def sequence_pairs(documents: Iterable[Sequence[str]],
                   count_tokens: TokenCounter, max_tokens: int,
                   stats: Optional[corpus.CorpusStats] = None,
                   block_sentences: int = 20_000
                   ) -> Iterator[Tuple[str, str]]:
  """Yields (s1, s2): neighbouring packed sequences of each document.

  Args:
    documents: each a list of sentences (`corpus.sentence_documents`).
    count_tokens: a sentence list's token counts (`token_counter`).
    max_tokens: most tokens in a sequence, `seq_length - 2`.
    stats: counts the pairs, if given.
    block_sentences: sentences counted per call, at most (documents are
      streamed in blocks: memory stays bounded on large corpora).
  """
  if max_tokens < 1:
    raise ValueError(f'max_tokens={max_tokens} must be 1 or more.')
  block: List[Sequence[str]] = []
  size = 0
  for document in documents:
    block.append(document)
    size += len(document)
    if size >= block_sentences:
      yield from _block_pairs(block, count_tokens, max_tokens, stats)
      block, size = [], 0
  yield from _block_pairs(block, count_tokens, max_tokens, stats)


def packed_documents(documents: Sequence[Sequence[str]],
                     count_tokens: TokenCounter, max_tokens: int
                     ) -> List[List[str]]:
  """Each document's packed sequences, counting all its sentences' tokens in
  one `count_tokens` call (the Beam pipeline packs a batch of documents)."""
  counts = count_tokens([sentence for document in documents
                         for sentence in document])
  packed, offset = [], 0
  for document in documents:
    document_counts = counts[offset:offset + len(document)]
    offset += len(document)
    packed.append([' '.join(document[begin:end]) for begin, end in
                   pack_sentences(document_counts, max_tokens)])
  return packed


def _block_pairs(block, count_tokens, max_tokens, stats):
  if not block:
    return
  for sequences in packed_documents(block, count_tokens, max_tokens):
    for s1, s2 in zip(sequences[:-1], sequences[1:]):
      if stats is not None:
        stats.pairs += 1
      yield s1, s2
