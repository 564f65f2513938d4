"""cmlm/demo.py: the untrained baseline read with mean pooling."""
import os

import pytest

from cmlm import demo
from cmlm import demo_measures
from experiments import registry  # noqa: F401  (registers experiments)
from official.core import exp_factory
from official.core import task_factory
from training import run_dir


@pytest.mark.skipif(not os.path.exists(demo_measures.STSB_DEV),
                    reason="no STS-B dev file under ../shared")
def test_mean_pooled_baseline_reads_the_same_weights_with_mean_pooling():
  params = exp_factory.get_exp_config("cmlm/demo")
  assert params.task.model.pooling == "max"
  tokenizer = run_dir.build_tokenizer(params)
  encoder = task_factory.get_task(params.task).build_model().encoder
  pairs = [("Mr. Darcy came to the ball.", "He did not dance."),
           ("The nation is at peace.", "Our people prosper.")]
  baseline = demo.mean_pooled_measures(params, encoder, tokenizer, pairs)
  max_stsb = demo_measures.stsb_dev_spearman(
      lambda s: run_dir.embed_sentences(encoder, tokenizer, s))
  # Random word vectors: mean-pooled they are a bag of words (~62 on STS-B
  # dev), max-pooled far from it (~38); the experiment is left as it was.
  assert baseline["stsb_dev"] > max_stsb + 10
  assert 0.0 <= baseline["retrieval_top1"] <= 1.0
  assert params.task.model.pooling == "max"
