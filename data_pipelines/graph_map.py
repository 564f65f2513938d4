"""`Dataset.map` traced without AutoGraph.

tf.data converts a mapped function's Python source with AutoGraph before it
traces it, and for the garden's pipelines (tokenizing, packing, masking,
the CMLM features) that conversion cost each training process seconds of
its start. Their control flow is written in TensorFlow ops (`tf.where`,
`tf.cond`, ragged and dense arithmetic), as the train step's and the
serving model's is, so nothing needs converting: a Python `if` on a tensor
in a mapped function is an error at tracing, not a silent conversion.
"""
from typing import Callable

import tensorflow as tf


def graph_map(dataset: tf.data.Dataset, function: Callable,
              **kwargs) -> tf.data.Dataset:
  """`dataset.map(function, **kwargs)`, `function` traced as written."""
  return dataset.map(tf.autograph.experimental.do_not_convert(function),
                     **kwargs)
