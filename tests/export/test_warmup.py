"""TF Serving's warm-up requests (export/warmup.py): the serving SavedModel
carries `assets.extra/tf_serving_warmup_requests`, and its requests, read
back with tensorflow-serving-api's protos, run against the SavedModel the
way TF Serving runs them."""
import os

import numpy as np
import pytest
import tensorflow as tf

from cmlm.export import serving
from cmlm.export import warmup
from tests.export import export_helpers

pytestmark = pytest.mark.slow


def run_like_tf_serving(saved_model_dir, requests):
  """Each request's outputs, as TF Serving's predict computes them: the
  SavedModel loaded into a TF1 session (what its C++ `SavedModelBundle`
  holds) and the request's tensors fed to its signature's input tensors."""
  results = []
  with tf.Graph().as_default(), tf.compat.v1.Session() as session:
    meta_graph = tf.compat.v1.saved_model.loader.load(
        session, [tf.saved_model.SERVING], saved_model_dir)
    for request in requests:
      signature = meta_graph.signature_def[request.model_spec.signature_name]
      feed = {signature.inputs[key].name: tf.make_ndarray(tensor)
              for key, tensor in request.inputs.items()}
      fetch = {key: info.name for key, info in signature.outputs.items()}
      results.append(session.run(fetch, feed))
  return results


def test_warmup_requests_run_against_the_serving_saved_model(tiny):
  serving_dir = tiny.result.serving_dir
  assert os.path.isfile(os.path.join(serving_dir, warmup.WARMUP_FILE))
  with open(os.path.join(serving_dir, warmup.WARMUP_FILE), "rb") as f:
    assert f.read(8)  # a TFRecord file, not empty
  requests = warmup.read_warmup_requests(serving_dir)
  loaded = tf.saved_model.load(serving_dir)
  assert {r.model_spec.signature_name for r in requests} == set(
      loaded.signatures) == {serving.SIGNATURE_NAME}
  sizes = [tf.make_ndarray(r.inputs[serving.INPUT_NAME]).shape[0]
           for r in requests]
  assert sizes == list(warmup.BATCH_SIZES)
  # The longest sentence is truncated, so the warm-up runs that path too.
  longest = max(warmup.SENTENCES, key=len)
  assert tiny.tokenizer.tokenize(tf.constant([longest])).row_lengths()[0] > (
      export_helpers.SEQ_LENGTH)

  results = run_like_tf_serving(serving_dir, requests)
  for request, result in zip(requests, results):
    sentences = tf.make_ndarray(request.inputs[serving.INPUT_NAME])
    embedding = result[serving.OUTPUT_NAME]
    assert embedding.shape == (len(sentences), 16)
    np.testing.assert_allclose(np.linalg.norm(embedding, axis=1), 1,
                               atol=1e-5)
    eager = loaded.signatures[serving.SIGNATURE_NAME](
        sentences=tf.constant(sentences))[serving.OUTPUT_NAME].numpy()
    np.testing.assert_allclose(embedding, eager, atol=1e-5)


def test_a_signature_taking_languages_gets_fitted_codes():
  """`serving_pcr` (sentences, languages) gets a fitted language's code; a
  signature with a non-string input gets no request."""
  with_languages = tf.function(
      lambda sentences, languages: sentences,
      input_signature=[tf.TensorSpec([None], tf.string, name="sentences"),
                       tf.TensorSpec([None], tf.string, name="languages")])
  numbers = tf.function(lambda values: values, input_signature=[
      tf.TensorSpec([None], tf.float32, name="values")])
  requests = warmup.warmup_requests(
      {"serving_pcr": with_languages.get_concrete_function(),
       "numbers": numbers.get_concrete_function()}, languages=["de", "fr"])
  assert [r.model_spec.signature_name for r in requests] == [
      "serving_pcr"] * len(warmup.BATCH_SIZES)
  codes = {c.decode() for r in requests
           for c in tf.make_ndarray(r.inputs["languages"])}
  assert codes == {"de", "fr"}
