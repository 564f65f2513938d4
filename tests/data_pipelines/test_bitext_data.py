"""Reading translation pairs and the bitext input pipeline."""
import gzip

import pytest
import tensorflow as tf

from cmlm.data_pipelines import bitext
from cmlm.data_pipelines import bitext_dataloader
from cmlm.data_pipelines import tokenization
from cmlm.experiments import cmlm_experiments


def _write(path, text):
  path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
  return str(path)


def test_tsv_takes_the_last_two_columns_and_skips_a_header(tmp_path):
  path = _write(tmp_path / "p.tsv", "domain\ten\tde\nui\tOpen\tÖffnen\n"
                "ui\tClose\tSchließen\n")
  assert bitext.read_bitext(path, header=True) == [("Open", "Öffnen"),
                                                   ("Close", "Schließen")]


def test_line_aligned_gzip_files(tmp_path):
  en, de = tmp_path / "a.en.gz", tmp_path / "a.de.gz"
  en.write_bytes(gzip.compress("A dog.\nA cat.\n".encode()))
  de.write_bytes(gzip.compress("Ein Hund.\nEine Katze.\n".encode()))
  assert bitext.read_bitext(f"{en}|{de}") == [("A dog.", "Ein Hund."),
                                              ("A cat.", "Eine Katze.")]


@pytest.mark.parametrize("source,target,message", [
    ("a\nb\nc\n", "x\ny\n", r"not line-aligned: .*t\.txt ends before line 3"),
    ("a\n\nc\n", "x\ny\nz\n", r"s\.txt:2: the source side is empty"),
    ("a\nb\n", "x\n \n", r"t\.txt:2: the target side is empty"),
    ("a\nb\n", b"x\n\xff\xfe\n", r"t\.txt:2 is not valid UTF-8"),
])
def test_aligned_files_errors_name_the_file_and_line(tmp_path, source, target,
                                                      message):
  s = _write(tmp_path / "s.txt", source)
  t = _write(tmp_path / "t.txt", target)
  with pytest.raises(bitext.BitextError, match=message):
    bitext.read_bitext(f"{s}|{t}")


def test_tsv_errors_name_the_file_and_line(tmp_path):
  path = _write(tmp_path / "p.tsv", "a\tb\nonly one column\n")
  with pytest.raises(bitext.BitextError, match=r"p\.tsv:2 has 1 tab"):
    bitext.read_bitext(path)
  with pytest.raises(bitext.BitextError, match="does not exist"):
    bitext.read_bitext(str(tmp_path / "missing.tsv"))


def _config(path, text_normalization="tf_text", **kwargs):
  """(data config, tokenization config) for `build_bitext_dataset`."""
  return (bitext_dataloader.BitextDataConfig(
      input_path=path, global_batch_size=2, **kwargs),
          tokenization.TokenizationConfig(
              vocab_file=cmlm_experiments.EMBEDDED_VOCAB, lower_case=True,
              seq_length=12, text_normalization=text_normalization))


def test_pipeline_yields_source_and_target_encoder_inputs(tmp_path):
  path = _write(tmp_path / "p.tsv", "".join(
      f"word {i} here\tother {i} there\n" for i in range(6)))
  batch = next(iter(bitext_dataloader.build_bitext_dataset(
      *_config(path, is_training=True))))
  assert sorted(batch) == sorted(bitext_dataloader.FEATURE_KEYS)
  for value in batch.values():
    assert value.shape == (2, 12) and value.dtype == tf.int32


def test_sharding_splits_pairs_between_input_pipelines(tmp_path):
  path = _write(tmp_path / "p.tsv", "".join(
      f"s{i}\tt{i}\n" for i in range(8)))
  seen = []
  for pipeline in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2,
                                         input_pipeline_id=pipeline)
    dataset = bitext_dataloader.build_bitext_dataset(*_config(path), context)
    seen.append([tuple(row) for batch in dataset
                 for row in batch["source_input_word_ids"].numpy().tolist()])
  assert len(seen[0]) == len(seen[1]) == 4
  assert not set(seen[0]) & set(seen[1])


def test_pipeline_tokenizes_with_the_configured_text_normalization(tmp_path):
  # NUL: Hugging Face's BERT drops it, TF Text splits the word there.
  sentences = ["the hou\x00se sat", "a house ran"]
  path = _write(tmp_path / "p.tsv", "".join(f"{s}\t{s}\n" for s in sentences))
  ids = {}
  for normalization in tokenization.TEXT_NORMALIZATIONS:
    batch = next(iter(bitext_dataloader.build_bitext_dataset(
        *_config(path, text_normalization=normalization))))
    tokenizer = tokenization.WordPieceTokenizer(
        cmlm_experiments.EMBEDDED_VOCAB, 12, lower_case=True,
        text_normalization=normalization)
    expected = tokenizer.tokenize_and_pack(tf.constant(sentences))
    ids[normalization] = batch["source_input_word_ids"].numpy().tolist()
    assert ids[normalization] == expected["input_word_ids"].numpy().tolist()
  assert ids["tf_text"] != ids["huggingface"]
  with pytest.raises(ValueError, match="text_normalization must be one of"):
    bitext_dataloader.validate_config(
        *_config(path, text_normalization="nfc"))
