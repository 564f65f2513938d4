"""The MiSAD objective (Li et al. 2020, sections 3.2-3.3): the three encoder
inputs, the protected n-gram, the lowest-MLM-score choice, a training step."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from cmlm.projects.misad import misad_data
from cmlm.data_pipelines import tokenization
from cmlm.projects.misad import misad_objective as misad
from tests import helpers
from cmlm.training import task as task_lib

WORDS = ["new", "york", "is", "a", "big", "city", "she", "moved", "to", "in",
         "the", "spring", "red", "wine", "##rk", "yo", "of", "and", "it",
         "was", "cold", "car", "old", "fast", "we", "left", "i", "love",
         "day", "night", "sun", "rain", "tree", "dog", "cat"]


@pytest.fixture()
def vocab_file(tmp_path):
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
  assert len(tokens) == helpers.VOCAB_SIZE
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(tokens) + "\n")
  return str(path)


def _objective(vocab_file, **config):
  return misad.MisadObjective(
      "misad", misad.MisadObjectiveConfig(**{"max_predictions_per_seq": 5,
                                             **config}),
      helpers.tiny_model_config(),
      tokenization.TokenizationConfig(vocab_file=vocab_file, seq_length=12))


def _features():
  """Two sentences, 12 positions: [CLS] t1..tn [SEP] pad; two candidates
  each (the second row's second slot unused)."""
  ids = np.zeros([2, 12], np.int32)
  ids[0, :9] = [2, 5, 6, 7, 8, 9, 10, 11, 3]   # 7 tokens
  ids[1, :7] = [2, 12, 13, 14, 15, 16, 3]      # 5 tokens
  return dict(input_word_ids=tf.constant(ids),
              input_mask=tf.constant((ids > 0).astype(np.int32)),
              input_type_ids=tf.zeros([2, 12], tf.int32),
              ngram_starts=tf.constant([[1, 4], [2, 0]], tf.int32),
              ngram_ends=tf.constant([[3, 7], [4, 0]], tf.int32),
              ngram_weights=tf.constant([[1.0, 1.0], [1.0, 0.0]]))


def _encoder_and_head(objective):
  from cmlm.modeling import model_builder  # pylint: disable=g-import-not-at-top
  encoder = model_builder.build_siamese_encoder(objective.model_config)
  return encoder, objective.build_head(encoder)


@pytest.mark.parametrize("selection,rest_input", [
    ("random", "masked"), ("lowest_mlm_score", "masked"),
    ("random", "unmasked")])
def test_ngram_is_never_masked_and_r_is_s_without_w(vocab_file, selection,
                                                     rest_input):
  # masking_rate 1: every token that may be masked is.
  objective = _objective(vocab_file, masking_rate=1.0,
                         max_predictions_per_seq=10,
                         ngram_selection=selection, rest_input=rest_input)
  encoder, head = _encoder_and_head(objective)
  features = _features()
  ids = features["input_word_ids"].numpy()
  for _ in range(5):
    out = objective.call(encoder, head, None, features, training=True)
    starts = out["ngram_starts_chosen"].numpy()
    ends = out["ngram_ends_chosen"].numpy()
    masked = out["masked_input_word_ids"].numpy()
    weights = out["masked_lm_weights"].numpy()
    for row in range(2):
      start, end = starts[row], ends[row]
      # w's tokens are untouched in S and never a prediction target ...
      np.testing.assert_array_equal(masked[row, start:end],
                                    ids[row, start:end])
      predicted = set(out["masked_lm_ids"].numpy()[row][weights[row] > 0])
      assert not predicted & set(ids[row, start:end])
      # ... while every other real token is predicted (masking_rate 1).
      others = [t for i, t in enumerate(ids[row])
                if t > 3 and not start <= i < end]
      assert sorted(out["masked_lm_ids"].numpy()[row][weights[row] > 0]) == (
          sorted(others))
      # R = S without w: |R| = |S| - |w| tokens, the rest in order; by
      # default cut from the masked S, so E^S and E^R read the same masks.
      rest = out["rest_inputs"]
      length = int(features["input_mask"].numpy()[row].sum())
      assert int(rest["input_mask"].numpy()[row].sum()) == (
          length - (end - start))
      source = masked if rest_input == "masked" else ids
      expected = np.concatenate([source[row, :start],
                                 source[row, end:length]])
      np.testing.assert_array_equal(
          rest["input_word_ids"].numpy()[row, :len(expected)], expected)
      # w alone: [CLS] w [SEP].
      ngram = out["ngram_inputs"]
      np.testing.assert_array_equal(
          ngram["input_word_ids"].numpy()[row, :end - start + 2],
          [2, *ids[row, start:end], 3])
      assert int(ngram["input_mask"].numpy()[row].sum()) == end - start + 2
    # The unused slot of row 1 is never chosen.
    assert starts[1] == 2 and ends[1] == 4


def test_sentence_embeddings_are_the_cls_pooler_of_each_input(vocab_file):
  objective = _objective(vocab_file, ngram_selection="random")
  encoder, head = _encoder_and_head(objective)
  out = objective.call(encoder, head, None, _features(), training=False)
  pooled = lambda inputs: head.pool(encoder(inputs)["sequence_output"])
  sentence = dict(out["rest_inputs"],
                  input_word_ids=out["masked_input_word_ids"],
                  input_mask=_features()["input_mask"])
  for key, inputs in (("sentence_embedding", sentence),
                      ("rest_embedding", out["rest_inputs"]),
                      ("ngram_embedding", out["ngram_inputs"])):
    np.testing.assert_allclose(out[key].numpy(), pooled(inputs).numpy(),
                               atol=1e-6)
  # The encoder's own (mean-pooled) vector is another one.
  assert not np.allclose(out["sentence_embedding"].numpy(),
                         encoder(sentence)["default"].numpy(), atol=1e-3)
  # The pooler trains with the objective; "encoder" and "cls" build none.
  trainable = {w.ref() for w in head.trainable_weights}
  assert all(w.ref() in trainable for w in head.pooler.weights)
  assert not _objective(vocab_file, sentence_embedding="cls").build_head(
      encoder).use_pooler


def test_mlm_on_r_predicts_the_masked_tokens_where_r_holds_them(vocab_file):
  objective = _objective(vocab_file, masking_rate=1.0,
                         max_predictions_per_seq=10, rest_mlm_weight=1.0,
                         ngram_selection="random")
  encoder, head = _encoder_and_head(objective)
  out = objective.call(encoder, head, None, _features(), training=True)
  # Every token of S outside w sits in R at its shifted position.
  masked = out["masked_input_word_ids"].numpy()
  rest = out["rest_inputs"]["input_word_ids"].numpy()
  lengths = _features()["input_mask"].numpy().sum(axis=1)
  for row in range(2):
    start = int(out["ngram_starts_chosen"][row])
    end = int(out["ngram_ends_chosen"][row])
    outside = [p for p in range(lengths[row]) if not start <= p < end]
    shifted = misad.shift_past_span(
        tf.constant([outside]), tf.constant([start]),
        tf.constant([end])).numpy()[0]
    np.testing.assert_array_equal(rest[row, shifted], masked[row, outside])
  assert out["rest_mlm_logits"].shape == out["mlm_logits"].shape
  with_rest = float(objective.compute_loss({}, out))
  without = dict(out)
  del without["rest_mlm_logits"]
  assert with_rest > float(objective.compute_loss({}, without))


def test_lowest_mlm_score_picks_the_worst_predicted_candidate(vocab_file):
  objective = _objective(vocab_file)
  encoder, head = _encoder_and_head(objective)
  features = _features()
  inputs = {k: features[k] for k in ("input_word_ids", "input_mask",
                                     "input_type_ids")}
  choice, scores = misad.lowest_score_choice(
      encoder, head, inputs, features["ngram_starts"], features["ngram_ends"],
      features["ngram_weights"], mask_id=4)
  # By hand for row 0: mask each candidate alone, average P(x_k | S\w).
  ids = features["input_word_ids"].numpy()
  manual = []
  for start, end in [(1, 3), (4, 7)]:
    masked = ids[:1].copy()
    masked[0, start:end] = 4
    sequence = encoder(dict(inputs, input_word_ids=tf.constant(masked),
                            input_mask=inputs["input_mask"][:1],
                            input_type_ids=inputs["input_type_ids"][:1]),
                       training=False)["sequence_output"]
    logits = head(sequence, tf.constant([list(range(start, end))]), None)
    probs = tf.nn.softmax(logits, axis=-1).numpy()[0]
    manual.append(np.mean([probs[k, ids[0, start + k]]
                           for k in range(end - start)]))
  np.testing.assert_allclose(scores.numpy()[0], manual, rtol=1e-4)
  assert int(choice[0]) == int(np.argmin(manual))
  assert int(choice[1]) == 0  # the only used slot


def test_misad_weight_zero_is_plain_mlm(vocab_file):
  objective = _objective(vocab_file, misad_weight=0.0)
  encoder, head = _encoder_and_head(objective)
  out = objective.call(encoder, head, None, _features(), training=True)
  assert "rest_inputs" not in out and "ngram_embedding" not in out
  assert np.isfinite(float(objective.compute_loss({}, out)))


def test_one_training_step_moves_the_encoder_through_the_misad_term(
    vocab_file):
  config = helpers.tiny_task_config(
      vocab_file, objectives={"misad": misad.MisadObjectiveConfig(
          mlm_weight=0.0, ngram_selection="random",
          max_predictions_per_seq=5)})
  config.tokenization.seq_length = 12
  task = task_lib.SentenceEncoderTask(config)
  model = task.build_model()
  features = {"misad": _features()}
  model(features)
  before = [w.numpy() for w in model.encoder.trainable_weights]
  optimizer = tf_keras.optimizers.SGD(1.0)
  loss = helpers.train_step(task, features, model, optimizer,
                            metrics=task.build_metrics())
  assert float(loss) > 0
  after = model.encoder.trainable_weights
  assert any(not np.allclose(b, a.numpy()) for b, a in zip(before, after))


def test_pipeline_maps_word_spans_onto_wordpiece_tokens(vocab_file, tmp_path):
  marked = tmp_path / "marked.txt"
  # "cityrk" is not in the vocabulary: WordPiece cuts it into city ##rk.
  marked.write_text("(new cityrk) is (a big city)\n\nno ngram here\n"
                    "she moved (to the) spring\n")
  config = misad_data.MisadDataConfig(input_path=str(marked),
                                      global_batch_size=2,
                                      max_ngrams_per_sentence=3)
  tokens = tokenization.TokenizationConfig(vocab_file=vocab_file,
                                           seq_length=12)
  batch = next(iter(misad_data.build_misad_dataset(config, tokens)))
  tokenizer = tokenization.build_wordpiece_tokenizer(tokens)
  pieces = tokenizer.tokenize(tf.constant(["cityrk"])).to_list()[0]
  assert len(pieces) > 1
  ids = batch["input_word_ids"].numpy()[0]
  start, end = batch["ngram_starts"].numpy()[0, 0], batch["ngram_ends"].numpy()[0, 0]
  assert list(ids[start:end]) == [5] + pieces  # 'new' + the pieces
  start, end = batch["ngram_starts"].numpy()[0, 1], batch["ngram_ends"].numpy()[0, 1]
  assert list(ids[start:end]) == [8, 9, 10]  # a big city
  assert list(batch["ngram_weights"].numpy()[0]) == [1.0, 1.0, 0.0]
  second = batch["input_word_ids"].numpy()[1]
  assert list(second[batch["ngram_starts"].numpy()[1, 0]:
                     batch["ngram_ends"].numpy()[1, 0]]) == [13, 15]  # to the


def test_malformed_marked_line_names_file_and_line(vocab_file, tmp_path):
  marked = tmp_path / "marked.txt"
  marked.write_text("(new york) is big\n(a big city\n")
  config = misad_data.MisadDataConfig(input_path=str(marked),
                                      global_batch_size=2)
  tokens = tokenization.TokenizationConfig(vocab_file=vocab_file)
  with pytest.raises(ValueError, match=r"marked.txt, line 2: unbalanced"):
    misad_data.build_misad_dataset(config, tokens)


def test_bad_settings_are_one_clear_error(vocab_file, tmp_path):
  for config, match in (({"sentence_embedding": "mean"}, "sentence_embedding"),
                        ({"rest_input": "both"}, "rest_input"),
                        ({"rest_mlm_weight": 1.0, "rest_input": "unmasked"},
                         "needs rest_input=masked")):
    with pytest.raises(ValueError, match=match):
      _objective(vocab_file, **config).check_data(misad_data.MisadDataConfig(
          input_path=str(tmp_path / "x.txt")))
  marked = tmp_path / "marked.txt"
  marked.write_text("(new york) is big\n")
  objective = _objective(vocab_file, normalization="cosine")
  with pytest.raises(ValueError, match="normalization must be one of"):
    objective.check_data(misad_data.MisadDataConfig(input_path=str(marked)))
  objective = _objective(vocab_file)
  with pytest.raises(ValueError, match="input_path is empty"):
    objective.check_data(misad_data.MisadDataConfig())


def test_marked_sentences_are_sampled_before_training(vocab_file, tmp_path):
  """`prepare` samples each objective's text (`text_sample`) before the
  run is built: a marked file without an n-gram fails there, in one line,
  not inside Model Garden's trainer (where gin adds a line of its own)."""
  objective = _objective(vocab_file)
  marked = tmp_path / "marked.txt"
  marked.write_text("(new york) is big\nno ngram here\nshe moved to "
                    "(new york)\n")
  config = misad_data.MisadDataConfig(input_path=str(marked))
  assert objective.text_sample(config, 5) == ["new york is big",
                                              "she moved to new york"]
  assert objective.text_sample(config, 1) == ["new york is big"]
  marked.write_text("")  # e.g. what `ngrams` wrote before it refused this
  with pytest.raises(ValueError, match="marked.txt holds no sentence with a "
                     "marked n-gram"):
    objective.text_sample(config, 5)
