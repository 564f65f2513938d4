"""MiSAD's evaluation tasks, registered into `python -m cmlm eval`.

  ulr_word, ulr_phrase, ulr_sentence  Li et al. 2020 table 2: analogies at
      each level of linguistic unit (`analogy_readers.read_ulr`)
  word_analogy  Mikolov et al. 2013's questions-words.txt (3CosAdd)

all in the group "analogy".
"""
import os

from cmlm.evaluation import tasks
from cmlm.evaluation.task_data import limit
from cmlm.projects.misad import analogy
from cmlm.projects.misad import analogy_readers

GROUP = "analogy"


def _evaluate(encoder, questions, options):
  return analogy.evaluate_analogies(encoder, questions, options.batch_size)


def _ulr_level(level):
  def read(path, options):
    questions = limit(analogy_readers.read_ulr(path, level),
                      options.max_examples)
    return {"data": questions, "files": list(questions.paths)}
  return tasks.Task(f"ulr_{level}", "Li et al. 2020 table 2", "accuracy",
                    "analogy/ulr", read, _evaluate,
                    card=tasks.CardEntry(task_name="Word analogy",
                                         dataset=f"ULR analogies ({level})"))


def _read_word_analogy(path, options):
  """Mikolov's questions-words.txt; without it under --data_dir, the copy
  gensim ships in its test data when gensim is installed."""
  if not os.path.exists(path):
    path = analogy_readers.gensim_questions_words() or path
  questions = limit(analogy_readers.read_mikolov(path), options.max_examples)
  return {"data": questions, "files": list(questions.paths)}


for _level in analogy_readers.LEVELS:
  tasks.register_task(_ulr_level(_level), GROUP)
tasks.register_task(
    tasks.Task("word_analogy", "Mikolov et al. 2013", "accuracy",
               "analogy/questions-words.txt", _read_word_analogy, _evaluate,
               card=tasks.CardEntry(task_name="Word analogy",
                                    dataset="Google word analogies")),
    GROUP)
