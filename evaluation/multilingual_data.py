"""Mining tests and multilingual pools built from line-aligned bitext.

No BUCC corpus ships with the project, so `write_mining_test` turns any
line-aligned bitext (by default Multi30k's validation captions, de-en) into
one in BUCC's format: two monolingual files where only some sentences have
their translation on the other side, and the gold pairs. The same aligned
files give figure 2's multilingual pool (`aligned_pool`): each sentence has
its translations in the pool, as PAWS-X's do in the paper.
"""
import os
from typing import Dict, List, Sequence, Tuple

import numpy as np

from cmlm.evaluation import bitext_readers
from cmlm.evaluation import text_files

MULTI30K_DIR = "multi30k"
MULTI30K_SPLIT = "val"  # 1014 captions in en, de, fr, cs


def multi30k_path(bitext_dir: str, language: str) -> str:
  return os.path.join(bitext_dir, MULTI30K_DIR,
                      f"{MULTI30K_SPLIT}.{language}.gz")


def aligned_pool(paths: Dict[str, str], size: int) -> Dict[str, List[str]]:
  """`{language: its first `size` lines}` of line-aligned files."""
  pool = {language: bitext_readers.read_sentences(
      path, f"the {language} side of a line-aligned bitext")[:size]
          for language, path in paths.items()}
  if len({len(sentences) for sentences in pool.values()}) != 1:
    sizes = ", ".join(f"{paths[language]} has {len(sentences)}"
                      for language, sentences in pool.items())
    raise ValueError(f"The pool files are not line-aligned: {sizes} lines.")
  lines = len(next(iter(pool.values()), []))
  if lines < 2:
    raise ValueError(f"The pool files ({', '.join(paths.values())}) hold "
                     f"{lines} line(s) each; fitting each language's "
                     "principal component needs 2 or more.")
  return pool


def write_mining_test(source: Sequence[str], target: Sequence[str],
                      directory: str, source_language: str,
                      target_language: str, num_gold: int = 400,
                      num_unpaired: int = 200, seed: int = 0
                      ) -> Tuple[str, str, str]:
  """Writes a BUCC-style test from line-aligned `source` and `target`.

  `num_gold` aligned pairs go to both sides; `num_unpaired` other source
  sentences and `num_unpaired` other target sentences (from disjoint lines,
  so their translations are absent) are mixed in; each side is shuffled.

  Returns:
    The paths `SRC-TGT.sample.SRC`, `SRC-TGT.sample.TGT` (`ID TAB sentence`)
    and `SRC-TGT.sample.gold` (`SRC_ID TAB TGT_ID`).
  """
  if len(source) != len(target):
    raise ValueError(f"The bitext is not line-aligned: {len(source)} "
                     f"{source_language} lines, {len(target)} "
                     f"{target_language} lines.")
  seen_source, seen_target, usable = set(), set(), []
  for index, (s, t) in enumerate(zip(source, target)):
    if (s.strip() and t.strip() and s not in seen_source and
        t not in seen_target):
      seen_source.add(s)
      seen_target.add(t)
      usable.append(index)
  needed = num_gold + 2 * num_unpaired
  if len(usable) < needed:
    raise ValueError(f"The bitext has {len(usable)} distinct non-empty pairs; "
                     f"the mining test needs {needed}.")
  rng = np.random.default_rng(seed)
  chosen = rng.permutation(usable)[:needed].tolist()
  gold = chosen[:num_gold]
  source_lines = gold + chosen[num_gold:num_gold + num_unpaired]
  target_lines = gold + chosen[num_gold + num_unpaired:]
  source_order = rng.permutation(source_lines).tolist()
  target_order = rng.permutation(target_lines).tolist()
  name = f"{source_language}-{target_language}.sample"
  os.makedirs(directory, exist_ok=True)
  paths = [os.path.join(directory, f"{name}.{suffix}")
           for suffix in (source_language, target_language, "gold")]
  _write(paths[0], [f"{source_language}-{n:06d}\t{_one_field(source[i])}"
                    for n, i in enumerate(source_order)])
  _write(paths[1], [f"{target_language}-{n:06d}\t{_one_field(target[i])}"
                    for n, i in enumerate(target_order)])
  source_id = {i: n for n, i in enumerate(source_order)}
  target_id = {i: n for n, i in enumerate(target_order)}
  _write(paths[2], [f"{source_language}-{source_id[i]:06d}\t"
                    f"{target_language}-{target_id[i]:06d}" for i in gold])
  return tuple(paths)


def _one_field(sentence: str) -> str:
  return " ".join(sentence.replace("\t", " ").splitlines())


def _write(path: str, lines: List[str]) -> None:
  with open(path, "w", encoding="utf-8") as f:
    f.write("".join(line + "\n" for line in lines))


def read_mining_test(source_path: str, target_path: str, gold_path: str):
  """`(source corpus, target corpus, gold index pairs)` of a mining test."""
  source = bitext_readers.read_mining_corpus(source_path)
  target = bitext_readers.read_mining_corpus(target_path)
  gold = bitext_readers.read_gold_pairs(
      text_files.require_file(gold_path, bitext_readers.GOLD_PAIRS), source,
      target)
  return source, target, gold
