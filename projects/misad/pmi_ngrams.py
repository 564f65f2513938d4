"""PMI n-gram extraction for MiSAD (Li et al. 2020, "Towards Universal
Representation Learning", section 3.1 and section 4).

For each document, every word n-gram w = (x_1 .. x_|w|), 2 <= |w| <= N
(N = 6 in the paper), inside a sentence is counted, and scored by the
paper's extended PMI (section 3.1):

    PMI(w) = 1/|w| * (log P(w) - sum_k log P(x_k))

with P(w) = count(w) / (number of |w|-grams of the document) and
P(x) = count(x) / (number of words of the document). The top k n-grams of
the document (k = 3000 in section 4) are kept, and each sentence is marked
with them greedily, longest n-gram first, left to right, so the marked
n-grams of a sentence never overlap.

The reference code (Liyianan/ULR, `pmi.py`) departs from the paper: it
scores with raw counts and without the 1/|w| factor,
`log count(w) - sum_k log count(x_k)`, which favours bigrams. Both are
offered (`formula="paper"`, the default, or `"code"`).

Words are the runs of letters and digits of the lower-cased text (punctuation
splits words and is dropped, as BERT's basic tokenizer splits it), so the
marked text is plain space-separated words. Output, one sentence a line, the
reference's format: marked n-grams in parentheses, documents separated by a
blank line:

    (new york) is a big city
    she moved to (new york) in (the spring)

The corpus is streamed one document at a time (only one document's counts
are held), the output is written through a temporary file and renamed when
complete, and the same corpus and settings always give the same bytes
(ties are broken by the n-gram's text).
"""
import collections
import dataclasses
import math
import os
import re
import sys
import time
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from cmlm.data_pipelines import atomic_file
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import sentence_splitter

FORMULAS = ("paper", "code")
DOCUMENT_UNITS = ("file", "paragraph")
_WORD = re.compile(r"[^\W_]+")
_MARKED = re.compile(r"\(([^()]*)\)|([^\s()]+)|(\S)")

Ngram = Tuple[str, ...]
Span = Tuple[int, int]  # word positions [start, end)


@dataclasses.dataclass
class PmiConfig:
  """How n-grams are scored and kept.

  Attributes:
    max_ngram_length: N, the longest n-gram in words (paper: 6).
    min_count: an n-gram seen fewer times in its document is not scored.
    top_k: n-grams kept per document (paper: 3000).
    formula: "paper" (1/|w| (log P(w) - sum log P(x_k)), section 3.1) or
      "code" (log count(w) - sum log count(x_k), the reference code).
    document_unit: "file" (each corpus file is one document, as the paper's
      Wikipedia articles) or "paragraph" (blank-line separated paragraphs).
  """
  max_ngram_length: int = 6
  min_count: int = 2
  top_k: int = 3000
  formula: str = "paper"
  document_unit: str = "file"

  def check(self) -> None:
    if self.max_ngram_length < 2:
      raise ValueError(f"max_ngram_length must be 2 or more, got "
                       f"{self.max_ngram_length}.")
    if self.min_count < 1:
      raise ValueError(f"min_count must be 1 or more, got {self.min_count}.")
    if self.top_k < 1:
      raise ValueError(f"top_k must be 1 or more, got {self.top_k}.")
    if self.formula not in FORMULAS:
      raise ValueError(f"formula must be one of {', '.join(FORMULAS)}, got "
                       f"{self.formula!r}.")
    if self.document_unit not in DOCUMENT_UNITS:
      raise ValueError(f"document_unit must be one of "
                       f"{', '.join(DOCUMENT_UNITS)}, got "
                       f"{self.document_unit!r}.")


def words_of(sentence: str) -> List[str]:
  """The lower-cased words (runs of letters and digits) of a sentence."""
  return _WORD.findall(sentence.lower())


def count_ngrams(sentences: Iterable[Sequence[str]], max_ngram_length: int
                 ) -> List[collections.Counter]:
  """`counts[n - 1][ngram]`: how often each n-gram occurs inside a sentence
  (n-grams never cross a sentence boundary)."""
  counts = [collections.Counter() for _ in range(max_ngram_length)]
  for words in sentences:
    for n in range(1, max_ngram_length + 1):
      counter = counts[n - 1]
      for start in range(len(words) - n + 1):
        counter[tuple(words[start:start + n])] += 1
  return counts


def pmi_scores(counts: List[collections.Counter], formula: str = "paper",
               min_count: int = 1) -> Dict[Ngram, float]:
  """PMI of every n-gram (n >= 2) seen at least `min_count` times.

  "paper": 1/|w| * (log P(w) - sum_k log P(x_k)), P(w) the n-gram's share of
  the document's |w|-grams, P(x) the word's share of its words (section
  3.1). "code": log count(w) - sum_k log count(x_k) (reference `pmi.py`).
  """
  if formula not in FORMULAS:
    raise ValueError(f"formula must be one of {', '.join(FORMULAS)}, got "
                     f"{formula!r}.")
  unigrams = counts[0]
  totals = [sum(counter.values()) for counter in counts]
  scores = {}
  for n in range(2, len(counts) + 1):
    for ngram, count in counts[n - 1].items():
      if count >= min_count:
        scores[ngram] = pmi_score(ngram, count, unigrams, totals, formula)
  return scores


def pmi_score(ngram: Ngram, count: int, unigrams: Dict[Ngram, int],
              totals: Sequence[int], formula: str = "paper") -> float:
  """One n-gram's PMI from its count, the unigram counts (keyed `(word,)`)
  and `totals[n - 1]`, the number of n-grams of each length (the Beam
  pipeline scores with this too, so both give the same floats)."""
  n = len(ngram)
  if formula == "paper":
    log_joint = math.log(count / totals[n - 1])
    log_parts = sum(math.log(unigrams[(word,)] / totals[0]) for word in ngram)
    return (log_joint - log_parts) / n
  return math.log(count) - sum(math.log(unigrams[(word,)]) for word in ngram)


def top_ngrams(scores: Dict[Ngram, float], top_k: int) -> Set[Ngram]:
  """The `top_k` highest-scoring n-grams; ties go to the n-gram that sorts
  first, so the choice never depends on dictionary order."""
  ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
  return {ngram for ngram, _ in ranked[:top_k]}


def mark_sentence(words: Sequence[str], ngrams: Set[Ngram],
                  max_ngram_length: int) -> List[Span]:
  """Spans of `ngrams` in `words`: left to right, the longest n-gram that
  starts at each position (as the reference's `ngram_match`); no overlap."""
  spans = []
  start = 0
  while start < len(words):
    for n in range(min(max_ngram_length, len(words) - start), 1, -1):
      if tuple(words[start:start + n]) in ngrams:
        spans.append((start, start + n))
        start += n
        break
    else:
      start += 1
  return spans


def format_marked(words: Sequence[str], spans: Sequence[Span]) -> str:
  """`words` as one line with each span in parentheses."""
  pieces, position = [], 0
  for start, end in spans:
    pieces.extend(words[position:start])
    pieces.append("(" + " ".join(words[start:end]) + ")")
    position = end
  pieces.extend(words[position:])
  return " ".join(pieces)


def parse_marked(line: str) -> Tuple[List[str], List[Span]]:
  """`format_marked`'s inverse: (words, spans) of a marked line.

  Raises:
    ValueError: an unbalanced or nested parenthesis, or an empty n-gram.
  """
  words, spans = [], []
  for match in _MARKED.finditer(line):
    inside, word, stray = match.groups()
    if stray is not None:
      raise ValueError(f"unbalanced parenthesis {stray!r} at character "
                       f"{match.start() + 1}")
    if inside is not None:
      ngram = inside.split()
      if len(ngram) < 1:
        raise ValueError(f"empty n-gram '()' at character "
                         f"{match.start() + 1}")
      spans.append((len(words), len(words) + len(ngram)))
      words.extend(ngram)
    else:
      words.append(word)
  return words, spans


@dataclasses.dataclass
class ExtractionStats:
  documents: int = 0
  sentences: int = 0
  marked_sentences: int = 0
  words: int = 0
  marked_ngrams: int = 0
  ngram_lengths: collections.Counter = dataclasses.field(
      default_factory=collections.Counter)

  def __str__(self):
    lengths = ", ".join(f"{n} words: {c}"
                        for n, c in sorted(self.ngram_lengths.items()))
    return (f"{self.documents} documents, {self.sentences} sentences "
            f"({self.marked_sentences} with an n-gram), {self.words} words, "
            f"{self.marked_ngrams} n-grams marked ({lengths or 'none'})")


def _documents(path_spec: str, unit: str, skip_invalid_lines: bool = False,
               corpus_stats: Optional[corpus.CorpusStats] = None
               ) -> Iterator[List[str]]:
  """Each document of the corpus as its sentences, streamed."""
  read = lambda spec: corpus.read_documents(  # pylint: disable=g-long-lambda
      spec, stats=corpus_stats, skip_invalid_lines=skip_invalid_lines,
      how_to_skip="pass --skip_invalid_lines")
  if unit == "paragraph":
    for paragraph in read(path_spec):
      yield sentence_splitter.split_sentences(paragraph)
    return
  for path in corpus.expand_path_spec(path_spec):
    sentences = []
    for paragraph in read(path):
      sentences.extend(sentence_splitter.split_sentences(paragraph))
    yield sentences


def mark_document(sentences: Sequence[str], config: PmiConfig
                  ) -> List[Tuple[List[str], List[Span]]]:
  """PMI n-grams of one document, marked in each of its sentences."""
  words = [words_of(sentence) for sentence in sentences]
  words = [w for w in words if w]
  counts = count_ngrams(words, config.max_ngram_length)
  kept = top_ngrams(pmi_scores(counts, config.formula, config.min_count),
                    config.top_k)
  return [(w, mark_sentence(w, kept, config.max_ngram_length)) for w in words]


def extract_ngrams(input_spec: str, output_path: str,
                   config: Optional[PmiConfig] = None,
                   keep_unmarked: bool = False, stream=None,
                   progress_seconds: float = 10.0,
                   skip_invalid_lines: bool = False) -> ExtractionStats:
  """`python -m cmlm ngrams`: marks the corpus's PMI n-grams into a file.

  Args:
    input_spec: the corpus (a file, a directory of *.txt, a glob or a
      comma-separated list), as `data_pipelines.corpus` reads it.
    output_path: the marked text, one sentence a line (see module doc).
    config: the `PmiConfig`.
    keep_unmarked: also write sentences without any n-gram.
    stream: where progress goes (stderr).
    progress_seconds: seconds between progress lines.
    skip_invalid_lines: skip lines that are not UTF-8 instead of failing.

  Returns:
    The `ExtractionStats`.

  Raises:
    ValueError: the corpus yields no n-gram (no word at all, or none repeated
      `min_count` times in a document); nothing is written then.
  """
  config = config or PmiConfig()
  config.check()
  stream = stream or sys.stderr
  corpus.expand_path_spec(input_spec)  # a missing path fails before writing
  directory = os.path.dirname(os.path.abspath(output_path))
  if not os.path.isdir(directory):
    raise FileNotFoundError(f"The output directory {directory} does not "
                            "exist.")
  stats = ExtractionStats()
  corpus_stats = corpus.CorpusStats()
  start = last_report = time.perf_counter()
  with atomic_file.atomic_file(output_path) as temporary:
    with open(temporary, "w", encoding="utf-8") as out:
      for sentences in _documents(input_spec, config.document_unit,
                                  skip_invalid_lines, corpus_stats):
        stats.documents += 1
        lines = []
        for words, spans in mark_document(sentences, config):
          stats.sentences += 1
          stats.words += len(words)
          if spans:
            stats.marked_sentences += 1
            stats.marked_ngrams += len(spans)
            stats.ngram_lengths.update(end - begin for begin, end in spans)
          if spans or keep_unmarked:
            lines.append(format_marked(words, spans))
        if lines:
          if stats.documents > 1 and out.tell():
            out.write("\n")
          out.write("\n".join(lines) + "\n")
        now = time.perf_counter()
        if now - last_report >= progress_seconds:
          last_report = now
          print(f"ngrams: {stats.documents} documents, {stats.words} words "
                f"({stats.words / (now - start):.0f} words/s), "
                f"{stats.marked_ngrams} n-grams marked", file=stream,
                flush=True)
      if not stats.marked_ngrams:  # MiSAD would fail later on such a file
        raise ValueError(_no_ngram_reason(input_spec, stats, config))
  if corpus_stats.skipped_invalid_lines:
    print(f"ngrams: skipped {corpus_stats.skipped_invalid_lines} line(s) that "
          "are not UTF-8.", file=stream, flush=True)
  print(f"ngrams: wrote {output_path}: {stats} in "
        f"{time.perf_counter() - start:.1f}s", file=stream, flush=True)
  return stats


def _no_ngram_reason(input_spec: str, stats: ExtractionStats,
                     config: PmiConfig) -> str:
  """Why `input_spec` gave no n-gram, and what to change, in one line."""
  found = (f"{stats.documents} document(s), {stats.sentences} sentence(s), "
           f"{stats.words} word(s)")
  if not stats.words:
    return (f"--input={input_spec} holds no word (a run of letters or "
            f"digits; found {found}): is it text? Nothing was written.")
  longer = (" or read longer documents (--document_unit=file)"
            if config.document_unit == "paragraph" else "")
  return (f"--input={input_spec} yields no n-gram: none of 2 to "
          f"{config.max_ngram_length} words occurs --min_count="
          f"{config.min_count} times within one document ({found}); lower "
          f"--min_count{longer}. Nothing was written.")
