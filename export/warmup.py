"""TF Serving's warm-up requests for the text-to-embedding SavedModel.

TF Serving runs the requests of a version's
`assets.extra/tf_serving_warmup_requests` when it loads the version, before
the version serves (https://www.tensorflow.org/tfx/serving/saved_model_warmup):
the first real requests then do not pay for the graph's lazy start-up
(table initialisation, kernel and memory set-up for each shape). The file is
a TFRecord file of `tensorflow.serving.PredictionLog` protos, one
`PredictRequest` each, built with `tensorflow-serving-api`'s protos:

    requests = warmup_requests(signatures)   # what the export writes
    write_warmup_requests(saved_model_dir, requests)
    read_warmup_requests(saved_model_dir)    # -> [PredictRequest, ...]

Each signature whose inputs are all batches of strings gets one request per
size of `BATCH_SIZES`, of sentences short and long (the longest goes past
any training length, so the truncation runs too). An input named
`languages` (`serving_pcr`) gets a fitted language's code.
"""
import os
from typing import Dict, List, Sequence

import tensorflow as tf

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
BATCH_SIZES = (1, 8, 32)
SENTENCES_INPUT = "sentences"
LANGUAGES_INPUT = "languages"
SENTENCES = (
    "Hello.",
    "A man is playing a guitar on the stage.",
    "The quick brown fox jumps over the lazy dog while the farmer watches "
    "from the porch of the old house by the river.",
    " ".join(["Every sentence of this paragraph repeats the same long "
              "clause so that the tokenizer has to truncate it."] * 12),
)


def warmup_requests(signatures: Dict[str, tf.types.experimental.ConcreteFunction],
                    languages: Sequence[str] = ("en",)) -> List:
  """`PredictRequest`s for `signatures` (name -> concrete function of the
  SavedModel), `len(BATCH_SIZES)` per signature that takes string batches;
  `languages`: codes for a `languages` input (a fitted one first)."""
  from tensorflow_serving.apis import predict_pb2  # pylint: disable=g-import-not-at-top
  requests = []
  for name, function in sorted(signatures.items()):
    inputs = _input_specs(function)
    if not inputs or any(spec.dtype != tf.string or spec.shape.rank != 1
                         for spec in inputs.values()):
      continue  # only string batches are filled in
    for batch_size in BATCH_SIZES:
      sentences = [SENTENCES[i % len(SENTENCES)] for i in range(batch_size)]
      values = {key: ([languages[i % len(languages)] for i in
                       range(batch_size)] if key == LANGUAGES_INPUT
                      else sentences) for key in inputs}
      request = predict_pb2.PredictRequest()
      request.model_spec.signature_name = name
      for key, value in values.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value, tf.string))
      requests.append(request)
  return requests


def _input_specs(function) -> Dict[str, tf.TensorSpec]:
  """A signature's inputs by name: keyword ones by their key, positional
  ones by their `TensorSpec`'s name (the signature's input key), or {}
  when one has no name."""
  args, kwargs = function.structured_input_signature
  specs = dict(kwargs)
  for spec in args:
    if not isinstance(spec, tf.TensorSpec) or not spec.name:
      return {}
    specs[spec.name] = spec
  return specs


def write_warmup_requests(saved_model_dir: str, requests: Sequence) -> str:
  """Writes `requests` as TF Serving's warm-up file of `saved_model_dir`;
  returns its path."""
  from tensorflow_serving.apis import prediction_log_pb2  # pylint: disable=g-import-not-at-top
  path = os.path.join(saved_model_dir, WARMUP_FILE)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with tf.io.TFRecordWriter(path) as writer:
    for request in requests:
      log = prediction_log_pb2.PredictionLog(
          predict_log=prediction_log_pb2.PredictLog(request=request))
      writer.write(log.SerializeToString())
  return path


def read_warmup_requests(saved_model_dir: str) -> List:
  """The `PredictRequest`s of `saved_model_dir`'s warm-up file."""
  from tensorflow_serving.apis import prediction_log_pb2  # pylint: disable=g-import-not-at-top
  requests = []
  for record in tf.data.TFRecordDataset(
      os.path.join(saved_model_dir, WARMUP_FILE)).as_numpy_iterator():
    log = prediction_log_pb2.PredictionLog.FromString(record)
    if log.WhichOneof("log_type") != "predict_log":
      raise ValueError(f"{saved_model_dir}: a warm-up record is a "
                       f"{log.WhichOneof('log_type')}, not a predict_log.")
    requests.append(log.predict_log.request)
  return requests
