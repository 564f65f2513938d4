"""Readers for the multilingual file formats: Tatoeba (table 5), BUCC-style
mining corpora (Kiros et al. 2020, section 4.4) and line-aligned bitext.

  * Tatoeba (LASER v1): `tatoeba.XXX-eng.XXX` and `tatoeba.XXX-eng.eng`,
    line i of one the translation of line i of the other.
  * BUCC: a monolingual corpus per language, `ID TAB sentence` a line (or
    plain sentences, one a line, whose ids are then their line numbers), and a
    gold file `SOURCE_ID TAB TARGET_ID` of the parallel pairs (a space in
    place of the TAB is read too).
  * Line-aligned text (Multi30k, `.gz` or plain): one sentence a line.
"""
import dataclasses
import glob
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from cmlm.evaluation import text_files
from cmlm.evaluation.text_files import DataFormatError

# What a gold file holds, as errors and `eval --help` say it.
GOLD_PAIRS = ("gold pairs (SOURCE_ID TAB TARGET_ID a line, or one space "
              "between them)")
_TATOEBA_FILE = re.compile(r"^tatoeba\.([^.]+)-eng\.\1$")


def read_sentences(path: str, what: str = "sentences, one a line"
                   ) -> List[str]:
  """The lines of a UTF-8 (or gzipped UTF-8) text file."""
  return [text for _, text in text_files.read_lines(path, what)]


def read_tatoeba(directory: str, languages: Optional[Sequence[str]] = None
                 ) -> Dict[str, Tuple[List[str], List[str]]]:
  """`{language: (its sentences, their English translations)}`.

  Args:
    directory: holds the LASER v1 files.
    languages: ISO 639-3 codes (`fra`, `deu`...); default every language found.
  """
  text_files.require_directory(directory, "the Tatoeba directory "
                               "(tatoeba.XXX-eng.XXX and tatoeba.XXX-eng.eng)")
  found = sorted(match.group(1) for match in (
      _TATOEBA_FILE.match(os.path.basename(p))
      for p in glob.glob(os.path.join(directory, "tatoeba.*-eng.*"))) if match)
  if languages is None:
    languages = found
    if not languages:
      raise FileNotFoundError(f"{directory} holds no tatoeba.XXX-eng.XXX "
                              "file (the LASER v1 Tatoeba layout).")
  pairs = {}
  for language in languages:
    prefix = os.path.join(directory, f"tatoeba.{language}-eng.")
    foreign = read_sentences(prefix + language,
                             f"the {language} side of Tatoeba {language}-eng")
    english = read_sentences(prefix + "eng",
                             f"the English side of Tatoeba {language}-eng")
    if len(foreign) != len(english):
      raise DataFormatError(
          prefix + "eng", min(len(foreign), len(english)) + 1,
          f"{len(english)} lines for {len(foreign)} in {prefix + language}; "
          "Tatoeba files must be line-aligned.")
    pairs[language] = (foreign, english)
  return pairs


@dataclasses.dataclass
class MiningCorpus:
  """One side of a mining task: sentence ids and sentences."""
  ids: List[str]
  sentences: List[str]
  path: str


def read_mining_corpus(path: str) -> MiningCorpus:
  """A BUCC corpus (`ID TAB sentence`), or plain lines with line-number ids."""
  lines = text_files.read_lines(path, "a monolingual corpus (BUCC 'ID TAB "
                                "sentence' lines, or one sentence a line)")
  if not lines:
    raise DataFormatError(path, 1, "is empty; expected one sentence a line.")
  if "\t" not in lines[0][1]:
    return MiningCorpus([str(n) for n, _ in lines], [t for _, t in lines],
                        path)
  ids, sentences, seen = [], [], {}
  for line in lines:
    sentence_id, sentence = text_files.split_fields(path, line,
                                                    ("id", "sentence"))
    if sentence_id in seen:
      raise DataFormatError(path, line[0], f"the id {sentence_id!r} was "
                            f"already used on line {seen[sentence_id]}.")
    seen[sentence_id] = line[0]
    ids.append(sentence_id)
    sentences.append(sentence)
  return MiningCorpus(ids, sentences, path)


def _gold_ids(path: str, line: text_files.Line) -> Tuple[str, str]:
  """The two ids of a gold line: split at its TAB, or, on a line without
  one, at its space."""
  text = line[1].strip()
  fields = text.split("\t" if "\t" in text else " ")
  if len(fields) != 2:
    raise DataFormatError(
        path, line[0], f"expected 2 fields (source_id, target_id) separated "
        f"by a TAB, or by one space on a line without a TAB; found "
        f"{len(fields)}.")
  return fields[0], fields[1]


def read_gold_pairs(path: str, source: MiningCorpus,
                    target: MiningCorpus) -> List[Tuple[int, int]]:
  """The gold parallel pairs as (source index, target index)."""
  source_index = {i: n for n, i in enumerate(source.ids)}
  target_index = {i: n for n, i in enumerate(target.ids)}
  pairs = []
  for line in text_files.read_lines(path, GOLD_PAIRS):
    if not line[1].strip():
      continue
    source_id, target_id = _gold_ids(path, line)
    if source_id not in source_index:
      raise DataFormatError(path, line[0], f"the source id {source_id!r} is "
                            f"not in {source.path}.")
    if target_id not in target_index:
      raise DataFormatError(path, line[0], f"the target id {target_id!r} is "
                            f"not in {target.path}.")
    pairs.append((source_index[source_id], target_index[target_id]))
  if not pairs:
    raise DataFormatError(path, 1, "holds no gold pair.")
  return pairs
