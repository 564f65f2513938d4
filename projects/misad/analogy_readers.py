"""Readers of analogy questions `a : b :: c : ?`, in two formats.

ULR's universal analogy data (Li et al. 2020, section 5.1.1 and appendix A;
github.com/Liyianan/ULR `ulr_data/`): `{semantic,syntactic}/{word,phrase,
sentence}/CATEGORY.txt`, one question a line, tab-separated:

    a TAB b TAB c TAB answer TAB distractor [TAB distractor ...]

the answer always in the fourth column, the candidates the fourth column
onwards (5 for the semantic sets, 2 for the syntactic ones).

Mikolov et al. (2013)'s `questions-words.txt` (word2vec; gensim ships it in
its test data): `: category` lines open a section, then one question a line,
`A B C D` separated by spaces; the candidates are every word of the file
but a, b and c. Sections named `gram*` are syntactic.

Malformed lines stop the run naming the file and line (`text_files`).
"""
import dataclasses
import glob
import os
from typing import List, Optional, Tuple

from cmlm.evaluation import text_files

LEVELS = ("word", "phrase", "sentence")
KINDS = ("semantic", "syntactic")


@dataclasses.dataclass
class AnalogyQuestions:
  """Questions `a : b :: c : answer` of one level.

  `candidates[i]` are question i's candidates (ULR), or None when every
  question chooses among `vocabulary` less its own a, b and c (Mikolov).
  """
  level: str
  paths: Tuple[str, ...]  # tuples: `task_data.limit` trims only lists
  categories: List[str]
  kinds: List[str]  # semantic or syntactic
  a: List[str]
  b: List[str]
  c: List[str]
  answers: List[str]
  candidates: List[Optional[Tuple[str, ...]]]
  vocabulary: Optional[Tuple[str, ...]] = None

  def __len__(self):
    return len(self.a)


def _empty(level: str, vocabulary=None) -> AnalogyQuestions:
  return AnalogyQuestions(level, (), [], [], [], [], [], [], [], vocabulary)


def read_ulr_file(path: str, category: str, kind: str,
                  questions: AnalogyQuestions) -> None:
  """Adds the questions of one ULR file to `questions`."""
  for line in text_files.read_lines(path, "a ULR analogy file"):
    number, text = line
    if not text.strip():
      continue
    fields = text.split("\t")
    if len(fields) < 5 or any(not f.strip() for f in fields):
      raise text_files.DataFormatError(
          path, number, "expected 5 or more non-empty tab-separated fields "
          f"(a, b, c, answer, distractor, ...), found "
          f"{len([f for f in fields if f.strip()])}.")
    a, b, c, answer, *distractors = (f.strip() for f in fields)
    questions.categories.append(category)
    questions.kinds.append(kind)
    questions.a.append(a)
    questions.b.append(b)
    questions.c.append(c)
    questions.answers.append(answer)
    questions.candidates.append((answer, *distractors))
  questions.paths += (path,)


def read_ulr(path: str, level: str) -> AnalogyQuestions:
  """One level of the ULR data under `path`: the ULR root (holding
  `semantic/LEVEL/` and `syntactic/LEVEL/`), a directory of CATEGORY.txt
  files, or one file."""
  if level not in LEVELS:
    raise ValueError(f"level must be one of {', '.join(LEVELS)}, got "
                     f"{level!r}.")
  questions = _empty(level)
  if os.path.isfile(path):
    files = [(path, "")]
  else:
    text_files.require_directory(
        path, "the ULR analogy data (semantic/ and syntactic/ with word/, "
        "phrase/, sentence/), or a directory of CATEGORY.txt files")
    files = [(p, kind) for kind in KINDS for p in sorted(
        glob.glob(os.path.join(path, kind, level, "*.txt")))]
    if not files:
      files = [(p, "") for p in sorted(glob.glob(os.path.join(path,
                                                              "*.txt")))]
  if not files:
    raise FileNotFoundError(f"{path} holds no {level}-level analogy file "
                            f"(expected semantic/{level}/*.txt or "
                            f"syntactic/{level}/*.txt).")
  for file_path, kind in files:
    category = os.path.splitext(os.path.basename(file_path))[0]
    read_ulr_file(file_path, category, kind or "unknown", questions)
  if not len(questions):
    raise ValueError(f"{path} holds no {level}-level analogy question.")
  return questions


def read_mikolov(path: str) -> AnalogyQuestions:
  """Mikolov's `questions-words.txt` format (see the module docstring)."""
  if os.path.isdir(path):
    path = os.path.join(path, "questions-words.txt")
  questions = _empty("word")
  category = None
  seen = {}
  for number, text in text_files.read_lines(path, "Mikolov's word analogy "
                                            "questions (questions-words.txt)"):
    if not text.strip():
      continue
    if text.startswith(":"):
      category = text[1:].strip()
      if not category:
        raise text_files.DataFormatError(path, number, "a ': category' line "
                                         "needs a category name.")
      continue
    fields = text.split()
    if len(fields) != 4:
      raise text_files.DataFormatError(
          path, number, f"expected 4 space-separated words (A B C D), found "
          f"{len(fields)}.")
    if category is None:
      raise text_files.DataFormatError(
          path, number, "a question before any ': category' line.")
    a, b, c, d = fields
    questions.categories.append(category)
    questions.kinds.append("syntactic" if category.startswith("gram")
                           else "semantic")
    questions.a.append(a)
    questions.b.append(b)
    questions.c.append(c)
    questions.answers.append(d)
    questions.candidates.append(None)
    for word in fields:
      seen.setdefault(word, None)
  if not len(questions):
    raise ValueError(f"{path} holds no analogy question.")
  questions.paths += (path,)
  questions.vocabulary = tuple(seen)
  return questions


def gensim_questions_words() -> Optional[str]:
  """The path of the `questions-words.txt` gensim ships in its test data,
  when gensim is installed (found without importing it), else None."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  spec = importlib.util.find_spec("gensim")
  for location in (spec.submodule_search_locations or []) if spec else []:
    path = os.path.join(location, "test", "test_data", "questions-words.txt")
    if os.path.isfile(path):
      return path
  return None
