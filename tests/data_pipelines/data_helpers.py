"""Tiny vocabulary and corpora shared by the tests/test_data_*.py files.

(Plain functions, not fixtures: conftest.py is shared with other test files.)
"""
import numpy as np

import cmlm.data_pipelines  # noqa: F401  (Keras 2 before TensorFlow loads)

SPECIAL_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
WORDS = ['.', ',', '!', '?', 'the', 'a', 'cat', 'dog', 'sat', 'ran', 'and',
         'on', 'mat', 'sentence', 'one', 'two', 'three', 'four']
DIGITS = [str(d) for d in range(10)] + ['##' + str(d) for d in range(10)]
TINY_VOCAB = SPECIAL_TOKENS + WORDS + DIGITS + ['##s']
ORDINALS = ['one', 'two', 'three', 'four']


def write_tiny_vocab(tmp_path, tokens=None, name='vocab.txt'):
  """Writes the tiny WordPiece vocabulary (or `tokens`); returns its path."""
  path = tmp_path / name
  path.write_text(''.join(t + '\n' for t in (tokens or TINY_VOCAB)),
                  encoding='utf-8')
  return str(path)


def numbered_document(number, num_sentences=3):
  """'Sentence 7 one. Sentence 7 two. ...': every sentence is unique."""
  return ' '.join(f'Sentence {number} {ORDINALS[i]}.'
                  for i in range(num_sentences))


def write_numbered_corpus(directory, num_documents, num_files=1,
                          num_sentences=3):
  """Writes documents 0..num_documents-1 over `num_files` files."""
  directory.mkdir(parents=True, exist_ok=True)
  for file_index in range(num_files):
    documents = [numbered_document(n, num_sentences)
                 for n in range(file_index, num_documents, num_files)]
    (directory / f'part{file_index:02d}.txt').write_text(
        '\n\n'.join(documents) + '\n', encoding='utf-8')
  return str(directory)


def restored_pairs(batches):
  """Set of (s1 ids, unmasked s2 ids) tuples from CMLM feature batches."""
  pairs = []
  for features in batches:
    features = {k: np.asarray(v) for k, v in features.items()}
    s2 = features['s2_input_word_ids'].copy()
    for row in range(s2.shape[0]):
      for position, token, weight in zip(features['masked_lm_positions'][row],
                                         features['masked_lm_ids'][row],
                                         features['masked_lm_weights'][row]):
        if weight > 0:
          s2[row, position] = token
    pairs.extend(zip(map(tuple, features['s1_input_word_ids']),
                     map(tuple, s2)))
  return pairs
