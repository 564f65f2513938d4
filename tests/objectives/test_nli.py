"""Cross-lingual NLI head and data (paper section 4.3)."""
import json

import numpy as np
import pytest
import tensorflow as tf

from cmlm.data_pipelines import nli_data
from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.experiments import cmlm_experiments
from cmlm.modeling import model_builder
from cmlm.modeling.nli_head import NliModel
from cmlm.modeling.nli_head import pair_features
from cmlm.objectives import nli
from tests import helpers


def test_pair_features_are_u_v_absdiff_product_in_that_order():
  u, v = tf.constant([[1.0, 2.0]]), tf.constant([[3.0, 5.0]])
  np.testing.assert_array_equal(pair_features(u, v),
                                [[1, 2, 3, 5, 2, 3, 3, 10]])


def test_nli_model_classifies_pairs_into_three_classes():
  cmlm = model_builder.build_cmlm_model(helpers.tiny_model_config(), 10)
  model = NliModel(cmlm.encoder)
  batch = helpers.fake_batch()
  features = {f"{side}_{k}": batch[f"{p}_{k}"]
              for side, p in (("premise", "s1"), ("hypothesis", "s2"))
              for k in ("input_word_ids", "input_mask", "input_type_ids")}
  assert model(features)["logits"].shape == (4, 3)
  kernel = model.head.classifier.kernel
  assert kernel.shape == (4 * 16, 3)  # [u, v, |u-v|, u*v] of hidden 16
  assert any(w is model.encoder.transformer.trainable_weights[0]
             for w in model.trainable_weights), "the encoder is fine-tuned"


def _tsv(path, rows):
  path.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
  return str(path)


def test_readers_parse_tsv_and_jsonl_and_skip_no_consensus(tmp_path):
  tsv = _tsv(tmp_path / "a.tsv", [("A man.", "A person.", "entailment"),
                                   ("A dog.", "A cat.", "2")])
  assert nli_data.read_nli(tsv) == ([("A man.", "A person.", 0),
                                     ("A dog.", "A cat.", 2)], 0)
  jsonl = tmp_path / "b.jsonl"
  jsonl.write_text("\n".join(json.dumps(r) for r in (
      {"sentence1": "P", "sentence2": "H", "gold_label": "neutral"},
      {"sentence1": "P", "sentence2": "H", "gold_label": "-"})))
  rows, skipped = nli_data.read_nli(str(jsonl))
  assert rows[0] == ("P", "H", 1) and skipped == 1


def test_bad_labels_and_misaligned_translations_are_clear_errors(tmp_path):
  bad = _tsv(tmp_path / "bad.tsv", [("P", "H", "entailment"),
                                    ("P", "H", "maybe")])
  with pytest.raises(nli_data.NliDataError, match=r"bad\.tsv:2: label 'maybe'"):
    nli_data.read_nli(bad)
  en = _tsv(tmp_path / "en.tsv", [("P", "H", "entailment")] * 2)
  de = _tsv(tmp_path / "de.tsv", [("P", "H", "entailment")])
  with pytest.raises(nli_data.NliDataError, match="row-aligned"):
    nli_data.read_translations(f"en={en},de={de}")


def test_cross_lingual_batches_mix_premise_and_hypothesis_languages(tmp_path):
  rows = [(f"the house {i} .", f"the letter {i} .", "neutral")
          for i in range(64)]
  lower = _tsv(tmp_path / "x.tsv", rows)
  upper = _tsv(tmp_path / "y.tsv", [(p.upper(), h.upper(), l)
                                    for p, h, l in rows])
  config = nli_data.NliDataConfig(
      input_path=f"x={lower},y={upper}", global_batch_size=64,
      is_training=True)
  tokenization = TokenizationConfig(
      vocab_file=cmlm_experiments.EMBEDDED_VOCAB, lower_case=False,
      seq_length=8)
  batch = next(iter(nli_data.NliDataLoader(config, tokenization).load()))
  # Cased vocabulary lookups differ between the two "languages": [UNK] is 1.
  premise_upper = np.any(batch["premise_input_word_ids"].numpy() == 1, axis=1)
  hypothesis_upper = np.any(batch["hypothesis_input_word_ids"].numpy() == 1,
                            axis=1)
  mixed = np.mean(premise_upper != hypothesis_upper)
  assert 0.3 < mixed < 0.7  # two languages drawn independently: about 1/2
  assert batch["label"].shape == (64,)


def test_nli_loss_is_cross_entropy_of_the_logits():
  objective = nli.NliObjective("nli", nli.NliObjectiveConfig(),
                                helpers.tiny_model_config(),
                                TokenizationConfig())
  logits = tf.constant([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
  labels = {"label": tf.constant([0, 2])}
  expected = np.mean([-np.log(np.exp(2) / (np.exp(2) + 1 + np.exp(-1))),
                      -np.log(1 / (2 + np.e))])
  assert float(objective.compute_loss(labels, {"logits": logits})) == (
      pytest.approx(expected, rel=1e-5))


def test_nli_batches_tokenize_with_the_configured_text_normalization(
    tmp_path):
  tsv = _tsv(tmp_path / "z.tsv", [("the hou\x00se .", "the d\x00og .",
                                   "neutral")] * 2)
  ids = {}
  for normalization in ("tf_text", "huggingface"):
    config = nli_data.NliDataConfig(input_path=tsv, global_batch_size=2)
    tokenization = TokenizationConfig(
        vocab_file=cmlm_experiments.EMBEDDED_VOCAB, lower_case=True,
        seq_length=8, text_normalization=normalization)
    batch = next(iter(nli_data.NliDataLoader(config, tokenization).load()))
    ids[normalization] = batch["premise_input_word_ids"].numpy()[0].tolist()
  vocab = open(cmlm_experiments.EMBEDDED_VOCAB, encoding="utf-8").read().split()
  assert vocab.index("house") in ids["huggingface"]  # the NUL went
  assert vocab.index("house") not in ids["tf_text"]  # TF Text splits there
