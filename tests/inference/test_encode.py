"""`python -m cmlm encode` on our exports and on other TF-Hub style pairs."""
import io
import os
import re

import numpy as np
import pytest

import cmlm.inference  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf

from cmlm.experiments import cmlm_experiments
from cmlm.inference import embedders
from cmlm.inference import encode_files
from cmlm.inference import progress as progress_lib
from official.nlp.configs import encoders
from official.nlp.tools import export_tfhub_lib
from tests import helpers
from tests.export import export_helpers as export_helpers

VOCAB = cmlm_experiments.EMBEDDED_VOCAB


@pytest.mark.slow
def test_cli_encode_writes_embeddings_of_every_line(tiny, tmp_path, capsys):
  lines = export_helpers.SENTENCES + ["", "emoji 😀"]
  input_path = tmp_path / "sentences.txt"
  input_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  output = str(tmp_path / "out" / "embeddings.npy")
  completed = helpers.run_command_here(
      ["encode", f"--model={tiny.result.export_dir}", f"--input={input_path}",
       f"--output={output}", "--batch_size=2"], capsys)
  assert completed.returncode == 0, completed.stderr[-2000:]
  assert "sent/s" in completed.stderr  # the progress line
  assert "Encoding 5 sentences of" in completed.stderr
  embeddings = np.load(output)
  expected = tiny.in_memory_embeddings(lines)
  expected /= np.linalg.norm(expected, axis=1, keepdims=True)
  np.testing.assert_allclose(embeddings, expected, atol=1e-5, rtol=0)
  assert os.listdir(tmp_path / "out") == ["embeddings.npy"]
  with pytest.raises(FileExistsError, match="--overwrite"):
    encode_files.encode_file(tiny.result.export_dir, str(input_path), output)



@pytest.mark.slow
def test_encode_takes_any_tf_hub_encoder_and_preprocessor_pair(tmp_path):
  """A Model Garden BERT export (export_tfhub_lib) works as --model."""
  config = encoders.EncoderConfig(type="bert", bert=encoders.BertEncoderConfig(
      vocab_size=cmlm_experiments.vocab_size_of(VOCAB), hidden_size=16,
      num_layers=1, num_attention_heads=2, intermediate_size=32))
  bert = encoders.build_encoder(config)
  checkpoint = tf.train.Checkpoint(encoder=bert).save(str(tmp_path / "ckpt"))
  pair = tmp_path / "bert_pair"
  export_tfhub_lib.export_model(
      str(pair / "encoder"), encoder_config=config,
      model_checkpoint_path=checkpoint, with_mlm=False, vocab_file=VOCAB,
      do_lower_case=True)
  export_tfhub_lib.export_preprocessing(
      str(pair / "preprocessor"), vocab_file=VOCAB, do_lower_case=True,
      tokenize_with_offsets=False, default_seq_length=16)
  input_path = tmp_path / "sentences.txt"
  input_path.write_text("\n".join(export_helpers.SENTENCES), encoding="utf-8")
  encode_files.encode_file(str(pair), str(input_path),
                           str(tmp_path / "bert.npy"),
                           normalize=False, show_progress=False)
  embeddings = np.load(tmp_path / "bert.npy")
  inputs = tf.saved_model.load(str(pair / "preprocessor"))(
      tf.constant(export_helpers.SENTENCES))
  expected = bert(inputs, training=False)["pooled_output"]
  np.testing.assert_allclose(embeddings, expected, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_a_pair_that_does_not_fit_is_one_line_naming_the_flag(tiny_export):
  encoder, preprocessor = tiny_export.encoder_dir, tiny_export.preprocessor_dir
  with pytest.raises(ValueError, match=(
      f"^--model={re.escape(preprocessor)},{re.escape(encoder)}: the first "
      "directory looks like a preprocessor .*ENCODER_DIR,PREPROCESSOR_DIR: "
      f"--model={re.escape(encoder)},{re.escape(preprocessor)}.$")):
    embedders.load_embedder(f"{preprocessor},{encoder}")


@pytest.mark.slow
def test_encode_takes_a_serving_base_or_one_version(tiny, tmp_path):
  expected = tiny.in_memory_embeddings(export_helpers.SENTENCES)
  expected /= np.linalg.norm(expected, axis=1, keepdims=True)
  for model in (tiny.result.serving_dir,
                os.path.dirname(tiny.result.serving_dir)):
    embed = embedders.load_embedder(model)
    np.testing.assert_allclose(embed(export_helpers.SENTENCES), expected,
                               atol=1e-5, rtol=0)


def test_progress_prints_a_tenth_at_a_time_to_a_log():
  stream = io.StringIO()
  progress = progress_lib.Progress(100, stream=stream)
  for _ in range(50):
    progress.update(2)
  progress.close()
  lines = stream.getvalue().splitlines()
  assert len(lines) == 11  # 0%, 10%, ..., 100%
  assert lines[-1].startswith("[" + "#" * 30 + "] 100% 100/100")


def test_batches_are_ordered_by_token_count_and_rows_restored():
  sentences = ["a a a a", "b", "c c", "d d d d d d", "e"]
  token_counts = {"a": 1, "b": 5, "c": 2, "d": 3, "e": 9}  # not by characters
  seen = []

  def embed(batch):
    seen.append([s[0] for s in batch])
    return np.array([[ord(s[0])] for s in batch], np.float32)
  embedder = embedders.Embedder(embed, token_lengths=lambda strings: tf.constant(
      [token_counts[s.decode()[0]] for s in strings.numpy()]))

  embeddings = embedder.embed(sentences, batch_size=2)
  assert seen == [["e", "b"], ["d", "c"], ["a"]]
  np.testing.assert_array_equal(embeddings[:, 0],
                                [ord(s[0]) for s in sentences])
