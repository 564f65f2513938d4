"""MiSAD's PMI n-grams on Apache Beam: `python -m cmlm prepare_ngrams`.

`pmi_ngrams` marks a corpus in one process; this is the same job as a Beam
pipeline for corpora of any size (the DirectRunner's processes here,
Dataflow, Flink or Spark on a cluster), read with the core's `beam_text`
(.txt / .gz, local or gs://, bad files skipped and counted). Two scopes:

  * `document` (the paper's section 4: "PMI scores ... are calculated for
    each document", top k per document): each document is scored and marked
    on its own, exactly as `pmi_ngrams.mark_document` does, so the output
    holds the very documents `python -m cmlm ngrams` writes;
  * `corpus` (section 3.1's SRILM counts over the whole corpus): every
    n-gram's count is a combine over the corpus (`CombinePerKey`), its PMI
    uses the corpus's unigram counts and n-gram totals, the top k over the
    corpus are kept (`Top`, ties to the n-gram that sorts first, as
    `pmi_ngrams.top_ngrams`) and every sentence is marked with them.

Output: text shards `{prefix}-NNNNN-of-NNNNN.txt` in `pmi_ngrams`' format
(one sentence a line, a blank line between documents), each document's
lines together, documents dealt to shards by a seeded hash of their text
(`beam_shards`): the same input and seed give the same bytes. MiSAD's data
config reads them with a glob or their directory.
"""
import dataclasses
import os
import sys
import time
from typing import Dict, Iterator, List, Sequence, Tuple

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from cmlm.data_pipelines import beam_runners
from cmlm.data_pipelines import beam_shards
from cmlm.data_pipelines import beam_text
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import sentence_splitter
from cmlm.projects.misad import pmi_ngrams

SCOPES = ("document", "corpus")
REPORT_ROWS = beam_text.REPORT_ROWS[:5] + (
    ("ngram_documents", "documents"),
    ("ngram_sentences", "sentences"),
    ("marked_sentences", "sentences with an n-gram"),
    ("marked_ngrams", "n-grams marked"),
)


def shard_names(output_prefix: str, num_shards: int) -> List[str]:
  base = os.path.basename(output_prefix)
  return [f"{base}-{index:05d}-of-{num_shards:05d}.txt"
          for index in range(num_shards)]


def _sentence_words(element) -> Tuple[str, List[List[str]]]:
  """(language, paragraphs) -> (language, the words of each sentence)."""
  language, paragraphs = element
  sentences = [sentence for paragraph in paragraphs
               for sentence in sentence_splitter.split_sentences(paragraph)]
  words = [pmi_ngrams.words_of(sentence) for sentence in sentences]
  return language, [w for w in words if w]


def _block(language: str, marked, keep_unmarked: bool
           ) -> Iterator[beam_shards.LanguageRecord]:
  """A document's marked sentences as one text block, counted."""
  beam_text.count("ngram_documents", language)
  lines = []
  for words, spans in marked:
    beam_text.count("ngram_sentences", language)
    if spans:
      beam_text.count("marked_sentences", language)
      beam_text.count("marked_ngrams", language, len(spans))
    if spans or keep_unmarked:
      lines.append(pmi_ngrams.format_marked(words, spans))
  if lines:
    yield language, ("\n".join(lines) + "\n").encode("utf-8")


def _mark_own(element, config: pmi_ngrams.PmiConfig, keep_unmarked: bool):
  """Document scope: the document's own top n-grams (`mark_document`)."""
  language, words = element
  counts = pmi_ngrams.count_ngrams(words, config.max_ngram_length)
  kept = pmi_ngrams.top_ngrams(
      pmi_ngrams.pmi_scores(counts, config.formula, config.min_count),
      config.top_k)
  yield from _block(language, [
      (w, pmi_ngrams.mark_sentence(w, kept, config.max_ngram_length))
      for w in words], keep_unmarked)


def _mark_with(element, kept, config: pmi_ngrams.PmiConfig,
               keep_unmarked: bool):
  """Corpus scope: the corpus's top n-grams, a side input."""
  language, words = element
  kept = set(kept)
  yield from _block(language, [
      (w, pmi_ngrams.mark_sentence(w, kept, config.max_ngram_length))
      for w in words], keep_unmarked)


def _ngrams_of(element, max_ngram_length: int):
  """Every n-gram (1..N words) inside each sentence, with a count of 1."""
  for words in element[1]:
    for n in range(1, max_ngram_length + 1):
      for start in range(len(words) - n + 1):
        yield tuple(words[start:start + n]), 1


@dataclasses.dataclass(frozen=True, order=False)
class _Rank:
  """Orders (n-gram, score) as `top_ngrams` ranks: a higher score first,
  then the n-gram that sorts first (Beam's `Top` keeps the largest)."""
  ngram: Tuple[str, ...]
  score: float

  def __lt__(self, other):
    return (self.score, other.ngram) < (other.score, self.ngram)


def _corpus_top_ngrams(words, config: pmi_ngrams.PmiConfig):
  counts = (words
            | "NgramsOf" >> beam.FlatMap(_ngrams_of, config.max_ngram_length)
            | "CountNgrams" >> beam.CombinePerKey(sum))
  unigrams = counts | "Unigrams" >> beam.Filter(lambda kv: len(kv[0]) == 1)
  totals = (counts
            | "ByLength" >> beam.Map(lambda kv: (len(kv[0]), kv[1]))
            | "Totals" >> beam.CombinePerKey(sum))

  def score(kv, unigram_counts, totals_by_length):
    ngram, count = kv
    length_totals = [totals_by_length.get(n, 0)
                     for n in range(1, config.max_ngram_length + 1)]
    return _Rank(ngram, pmi_ngrams.pmi_score(
        ngram, count, unigram_counts, length_totals, config.formula))

  return (counts
          | "Scored" >> beam.Filter(
              lambda kv: len(kv[0]) >= 2 and kv[1] >= config.min_count)
          | "Score" >> beam.Map(score, beam.pvalue.AsDict(unigrams),
                                beam.pvalue.AsDict(totals))
          | "Top" >> beam.combiners.Top.Of(config.top_k)
          | "Ngrams" >> beam.Map(lambda ranks: [r.ngram for r in ranks]))


@dataclasses.dataclass
class NgramsResult:
  shard_paths: List[str]
  counts: beam_text.Counts
  documents_by_language: Dict[str, int]
  seconds: float


def _nothing_marked(input_spec: str, counts: beam_text.Counts) -> str:
  """Why the job marked no sentence: a corpus left without a sentence once
  its lines that are not UTF-8 (and its binary files) were skipped is said
  to be no UTF-8 text, as `ngrams` says it."""
  skipped = [f"{count} {what}{'' if count == 1 else 's'}{why}"
             for count, what, why in (
                 (counts.get("lines_not_utf8"), "line", " not UTF-8"),
                 (counts.get("files_binary"), "binary file", " (a NUL byte)"))
             if count]
  if skipped and not counts.get("ngram_sentences"):
    return (f"The corpus {input_spec!r} is not UTF-8 text: "
            f"{' and '.join(skipped)} skipped, no sentence left; convert it "
            "to UTF-8. Nothing was written.")
  return (f"The corpus {input_spec!r} has no sentence with an n-gram; "
          "nothing was written.")


def prepare_ngrams(input_spec: str, output_prefix: str,
                   config: pmi_ngrams.PmiConfig, scope: str = "document",
                   num_shards: int = 16, seed: int = 0,
                   keep_unmarked: bool = False,
                   pipeline_args: Sequence[str] = (), overwrite: bool = False,
                   stream=None) -> NgramsResult:
  """Runs the job; publishes the text shards only when it succeeded.

  Raises:
    ValueError (`corpus.CorpusError`): a bad setting or input, before the
      job, or a corpus without a marked sentence (nothing is published).
    FileExistsError: the output exists and `overwrite` is False.
  """
  stream = stream or sys.stderr
  config.check()
  if scope not in SCOPES:
    raise ValueError(f"scope={scope!r} must be one of {', '.join(SCOPES)}.")
  if num_shards < 1:
    raise ValueError(f"num_shards={num_shards} must be 1 or more.")
  files = beam_text.expand_input_spec(input_spec)
  names = shard_names(output_prefix, num_shards)
  old_outputs = beam_shards.existing_outputs(
      [], f"{output_prefix}-*-of-*.txt")
  if old_outputs and not overwrite:
    raise FileExistsError(f"{old_outputs[0]} exists; pass --overwrite to "
                          f"replace the output {output_prefix}.")
  print(f"prepare_ngrams: {len(files)} inputs -> {output_prefix}-*-of-"
        f"{num_shards:05d}.txt ({scope} scope, seed {seed})", file=stream,
        flush=True)
  start = time.perf_counter()
  with beam_shards.temporary_output(output_prefix) as directory:
    pipeline = beam.Pipeline(options=PipelineOptions(list(pipeline_args)))
    words = (pipeline
             | "Inputs" >> beam.Create(files)
             | "MatchFiles" >> beam.FlatMap(beam_text.match_files)
             | "Reshuffle" >> beam.Reshuffle()
             | "ReadDocuments" >> beam.ParDo(beam_text.ReadDocuments(
                 config.document_unit))
             | "SentenceWords" >> beam.Map(_sentence_words))
    if scope == "document":
      blocks = words | "Mark" >> beam.FlatMap(_mark_own, config,
                                              keep_unmarked)
    else:
      kept = _corpus_top_ngrams(words, config)
      blocks = words | "Mark" >> beam.FlatMap(
          _mark_with, beam.pvalue.AsSingleton(kept), config, keep_unmarked)
    _ = blocks | "WriteShards" >> beam_shards.WriteSeededShards(
        directory, names, seed, beam_shards.write_text_shard)
    result = beam_runners.run_to_end(pipeline)
    counts = beam_runners.query_counts(result)
    documents = beam_shards.read_summary(directory, names)
    if not sum(documents.values()):
      raise corpus.CorpusError(
          f"{_nothing_marked(input_spec, counts)}\n"
          f"{beam_text.report_table(counts, REPORT_ROWS)}")
    shard_paths = beam_shards.publish(directory, names, output_prefix,
                                      old_outputs, "", lambda: None)
  return NgramsResult(shard_paths, counts, documents,
                      time.perf_counter() - start)
