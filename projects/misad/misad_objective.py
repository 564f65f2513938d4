"""MiSAD beside MLM (Li et al. 2020, "Towards Universal Representation
Learning", sections 3.2-3.3), as an objective over the shared encoder.

For a sentence S holding a PMI n-gram w (`misad_data.py`):

  1. w is chosen among S's candidate n-grams: by default the one with the
     lowest MLM score (section 3.3, after Tamborrino et al. 2020),
     score_w = 1/|w| sum_k P(x_k | S\\w), S\\w being S with every token of w
     replaced by [MASK]; the scores come from one extra forward pass, without
     gradient, of the K copies of S (one per candidate) batched together.
     `ngram_selection="random"` picks uniformly instead (the reference
     code's choice).
  2. S is masked as BERT does (`data_pipelines.masking.mask_tokens`), never
     inside w (section 3.2: "we must avoid masking out the n-gram w").
  3. Three encoder inputs: the masked S, R = the masked S without w's tokens
     (`rest_input="masked"`: E^S and E^R see the same masked context, and
     S = w + R holds for the sequences the encoder reads; "unmasked" cuts R
     from the original S instead), and w alone (`[CLS] w [SEP]`, never
     masked). E^S, E^R and E^w are, by `sentence_embedding`:
       * "cls_pooler" (default): "the pooled output of the [CLS] token"
         (3.2), a dense + tanh layer over the last layer's [CLS] state,
         trained with the objective as the reference code's re-initialised
         `BertPooler` (`misad_head.MisadHead`);
       * "cls": the [CLS] state itself;
       * "encoder": the encoder's `default` output (its pooling; the
         sentence vector the garden evaluates).
  4. L = mlm_weight * L_MLM(S) + misad_weight * MSE(E^w + E^R, E^S)
     (`misad_loss.py`, `normalization`; the paper: equal weights)
     + rest_mlm_weight * L_MLM(R): the reference code also predicts R's
     masked tokens (its own masks there; here R's are S's, moved left past
     w); the paper's loss has MLM on S only, so the default weight is 0.

With `misad_weight=0` the objective is plain MLM on the same sentences (no
n-gram chosen or protected, R and w never encoded): the baseline.

The MLM head is Model Garden's `MaskedLM` tied to the shared embedding table,
through `misad_head.MisadHead` (a `ConditionalMlmHead` without its skip
fusion, with the [CLS] pooler), checkpointed as `<name>_head`.
"""
import dataclasses

import tensorflow as tf
import tf_keras

from cmlm.data_pipelines import masking
from cmlm.projects.misad import misad_data
from cmlm.data_pipelines import vocabulary
from cmlm.projects.misad import misad_loss
from cmlm.objectives import base
from cmlm.projects.misad.misad_head import MisadHead

NGRAM_SELECTIONS = ("lowest_mlm_score", "random")
SENTENCE_EMBEDDINGS = ("cls_pooler", "cls", "encoder")
REST_INPUTS = ("masked", "unmasked")


@dataclasses.dataclass
class MisadObjectiveConfig(base.with_data(misad_data.MisadDataConfig)):
  """MiSAD + MLM on sentences marked with PMI n-grams.

  Attributes:
    mlm_weight: weight of the MLM loss on S (paper: 1).
    misad_weight: weight of MSE(E^w + E^R, E^S) (paper: 1); 0 is MLM alone.
    normalization: "unit_renormalized_sum" (default, reference code),
      "unit" (the paper read literally: minimum at 120 degrees) or "none";
      see `misad_loss.py`.
    sentence_embedding: "cls_pooler" (default), "cls" or "encoder" (the
      module doc, step 3).
    rest_input: "masked" (default: R cut from the masked S) or "unmasked".
    rest_mlm_weight: weight of MLM on R's masked tokens (reference code: 1;
      default 0, the paper's loss); needs rest_input="masked".
    ngram_selection: "lowest_mlm_score" (section 3.3) or "random".
    max_predictions_per_seq: most tokens of S masked.
    masking_rate: share of S's tokens masked (BERT: 0.15).
    mlm_activation: activation of the MLM head's transform layer.
    mlm_initializer_range: stddev of the MLM head's initializer.
  """
  type: str = "misad"
  mlm_weight: float = 1.0
  misad_weight: float = 1.0
  normalization: str = "unit_renormalized_sum"
  sentence_embedding: str = "cls_pooler"
  rest_input: str = "masked"
  rest_mlm_weight: float = 0.0
  ngram_selection: str = "lowest_mlm_score"
  max_predictions_per_seq: int = 20
  masking_rate: float = 0.15
  mlm_activation: str = "gelu"
  mlm_initializer_range: float = 0.02


def span_mask(seq_length, starts, ends):
  """`[batch, seq_length]` bool, True on positions [start, end) of each row."""
  positions = tf.range(seq_length)[tf.newaxis, :]
  return (positions >= starts[:, tf.newaxis]) & (positions < ends[:, tf.newaxis])


def remove_span(inputs, starts, ends):
  """R: the encoder inputs with the tokens [start, end) cut out (the rest
  moves left, padding fills the end), so |R| = |S| - |w| tokens."""
  ids, mask = inputs["input_word_ids"], inputs["input_mask"]
  seq_length = tf.shape(ids)[1]
  keep = tf.cast(mask, tf.bool) & ~span_mask(seq_length, starts, ends)
  positions = tf.range(seq_length)[tf.newaxis, :]
  # Kept positions first, in order; dropped ones after them.
  order = tf.argsort(tf.where(keep, positions, positions + seq_length),
                     axis=1, stable=True)
  length = tf.reduce_sum(tf.cast(keep, tf.int32), axis=1, keepdims=True)
  new_mask = tf.cast(positions < length, ids.dtype)
  return dict(input_word_ids=tf.gather(ids, order, batch_dims=1) * new_mask,
              input_mask=new_mask, input_type_ids=tf.zeros_like(ids))


def span_alone(inputs, starts, ends, cls_id, sep_id):
  """w alone: `[CLS] ids[start:end] [SEP]`, padded to the same length."""
  ids = inputs["input_word_ids"]
  seq_length = tf.shape(ids)[1]
  length = (ends - starts)[:, tf.newaxis]
  positions = tf.range(seq_length)[tf.newaxis, :]
  source = tf.clip_by_value(starts[:, tf.newaxis] + positions - 1, 0,
                            seq_length - 1)
  tokens = tf.gather(ids, source, batch_dims=1)
  new_ids = tf.where(positions == 0, cls_id,
                     tf.where(positions <= length, tokens,
                              tf.where(positions == length + 1, sep_id, 0)))
  new_mask = tf.cast(positions <= length + 1, ids.dtype)
  return dict(input_word_ids=new_ids * new_mask, input_mask=new_mask,
              input_type_ids=tf.zeros_like(ids))


def lowest_score_choice(encoder, head, inputs, starts, ends, weights,
                        mask_id):
  """Section 3.3: the candidate whose tokens the MLM predicts worst.

  Each of the K candidates is masked in its own copy of S (S\\w); the K
  copies go through the encoder in one forward pass without gradient and
  score_w = mean_k P(x_k | S\\w). Unused slots never win.

  Returns: `[batch]` int32, the chosen slot; and `[batch, K]` the scores.
  """
  ids = inputs["input_word_ids"]
  batch_size, seq_length = tf.shape(ids)[0], tf.shape(ids)[1]
  num_slots = tf.shape(starts)[1]
  max_tokens = tf.reduce_max(ends - starts)
  flat_starts = tf.reshape(starts, [-1])
  flat_ends = tf.reshape(ends, [-1])
  # [batch * K, seq_length]: copy k of S with candidate k masked.
  tile = lambda t: tf.reshape(tf.repeat(t, num_slots, axis=0),
                              [-1, seq_length])
  tiled_ids = tile(ids)
  masked = tf.where(span_mask(seq_length, flat_starts, flat_ends), mask_id,
                    tiled_ids)
  outputs = encoder(dict(input_word_ids=masked,
                         input_mask=tile(inputs["input_mask"]),
                         input_type_ids=tile(inputs["input_type_ids"])),
                    training=False)
  offsets = tf.range(tf.maximum(max_tokens, 1))[tf.newaxis, :]
  positions = tf.minimum(flat_starts[:, tf.newaxis] + offsets, seq_length - 1)
  valid = tf.cast(offsets < (flat_ends - flat_starts)[:, tf.newaxis],
                  tf.float32)
  # [batch * K, max_tokens, vocab]
  logits = head(outputs["sequence_output"], positions, None)
  log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
  truth = tf.gather(tiled_ids, positions, batch_dims=1)
  probs = tf.exp(tf.gather(log_probs, truth, batch_dims=2))
  scores = tf.math.divide_no_nan(tf.reduce_sum(probs * valid, axis=1),
                                 tf.reduce_sum(valid, axis=1))
  scores = tf.reshape(scores, [batch_size, num_slots])
  scores = tf.stop_gradient(tf.where(weights > 0, scores, 2.0))
  return tf.argmin(scores, axis=1, output_type=tf.int32), scores


def shift_past_span(positions, starts, ends):
  """Masked positions of S as positions of R (`remove_span`): those after w
  move left by |w| (none lies inside w, which is never masked)."""
  width = (ends - starts)[:, tf.newaxis]
  return tf.where(positions >= ends[:, tf.newaxis], positions - width,
                  positions)


def random_choice(weights, seed=None):
  """A uniformly drawn used slot per row, `[batch]` int32."""
  noise = tf.random.uniform(tf.shape(weights), seed=seed)
  return tf.argmax(tf.where(weights > 0, noise, -1.0), axis=1,
                   output_type=tf.int32)


@base.register_objective("misad")
class MisadObjective(base.Objective):
  """MSE(E^w + E^R, E^S) beside MLM on S (section 3.2)."""
  config_cls = MisadObjectiveConfig

  def check_data(self, data_config):
    config = self.config
    if config.normalization not in misad_loss.NORMALIZATIONS:
      raise ValueError(f"task.objectives.{self.name}.normalization must be "
                       f"one of {', '.join(misad_loss.NORMALIZATIONS)}, got "
                       f"{config.normalization!r}.")
    if config.ngram_selection not in NGRAM_SELECTIONS:
      raise ValueError(f"task.objectives.{self.name}.ngram_selection must "
                       f"be one of {', '.join(NGRAM_SELECTIONS)}, got "
                       f"{config.ngram_selection!r}.")
    if config.sentence_embedding not in SENTENCE_EMBEDDINGS:
      raise ValueError(f"task.objectives.{self.name}.sentence_embedding must "
                       f"be one of {', '.join(SENTENCE_EMBEDDINGS)}, got "
                       f"{config.sentence_embedding!r}.")
    if config.rest_input not in REST_INPUTS:
      raise ValueError(f"task.objectives.{self.name}.rest_input must be one "
                       f"of {', '.join(REST_INPUTS)}, got "
                       f"{config.rest_input!r}.")
    if min(config.mlm_weight, config.misad_weight,
           config.rest_mlm_weight) < 0:
      raise ValueError(f"task.objectives.{self.name}: mlm_weight, "
                       "misad_weight and rest_mlm_weight must be 0 or more.")
    if config.rest_mlm_weight > 0 and config.rest_input != "masked":
      raise ValueError(f"task.objectives.{self.name}.rest_mlm_weight > 0 "
                       "predicts R's masked tokens: it needs "
                       "rest_input=masked.")
    if not 0 < config.masking_rate <= 1:
      raise ValueError(f"task.objectives.{self.name}.masking_rate must be "
                       f"in (0, 1], got {config.masking_rate}.")
    if not 1 <= config.max_predictions_per_seq <= self.tokenization.seq_length:
      raise ValueError(f"task.objectives.{self.name}.max_predictions_per_seq "
                       "must be between 1 and tokenization.seq_length "
                       f"({self.tokenization.seq_length}), got "
                       f"{config.max_predictions_per_seq}.")
    misad_data.validate_config(data_config, self.tokenization, self.vocab)

  def text_sample(self, data_config, max_sentences):
    return misad_data.sample_marked_sentences(data_config.input_path,
                                              max_sentences)

  def build_inputs(self, data_config, input_context=None):
    return misad_data.build_misad_dataset(data_config, self.tokenization,
                                          input_context, self.vocab)

  def build_head(self, encoder):
    return MisadHead(
        encoder.transformer,
        pooler=self.config.sentence_embedding == "cls_pooler",
        pooler_initializer_range=self.config.mlm_initializer_range,
        mlm_activation=self.config.mlm_activation,
        mlm_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=self.config.mlm_initializer_range),
        name=f"{self.name}_mlm_head")

  def _special_ids(self):
    if not hasattr(self, "_special"):
      ids = vocabulary.special_token_ids(vocabulary.read_vocabulary(
          self.tokenization.vocab_file, self.vocab).tokens)
      self._special = ids
    return self._special

  def call(self, encoder, head, state, features, training=None):
    del state
    config = self.config
    special = self._special_ids()
    mask_id = special[vocabulary.MASK]
    inputs = {key: features[key] for key in
              ("input_word_ids", "input_mask", "input_type_ids")}
    ids, mask = inputs["input_word_ids"], inputs["input_mask"]
    seq_length = tf.shape(ids)[1]
    with_misad = config.misad_weight > 0
    if with_misad:
      weights = features["ngram_weights"]
      if config.ngram_selection == "lowest_mlm_score":
        choice, _ = lowest_score_choice(
            encoder, head, inputs, features["ngram_starts"],
            features["ngram_ends"], weights, mask_id)
      else:
        choice = random_choice(weights)
      starts = tf.gather(features["ngram_starts"], choice, batch_dims=1)
      ends = tf.gather(features["ngram_ends"], choice, batch_dims=1)
      # w is never masked in S: its tokens are no masking candidates.
      maskable = mask * tf.cast(~span_mask(seq_length, starts, ends),
                                mask.dtype)
    else:
      maskable = mask
    masked_ids, positions, masked_lm_ids, masked_lm_weights = (
        masking.mask_tokens(
            ids, maskable,
            max_predictions_per_seq=config.max_predictions_per_seq,
            masking_rate=config.masking_rate, mask_token_id=mask_id,
            vocab_size=self.model_config.encoder.vocab_size,
            special_token_ids=[special[t] for t in vocabulary.SPECIAL_TOKENS]))
    sentence = encoder(dict(inputs, input_word_ids=masked_ids),
                       training=training)
    outputs = dict(
        mlm_logits=head(sentence["sequence_output"], positions, None),
        masked_lm_ids=masked_lm_ids, masked_lm_weights=masked_lm_weights,
        masked_input_word_ids=masked_ids)
    if with_misad:
      source = (dict(inputs, input_word_ids=masked_ids)
                if config.rest_input == "masked" else inputs)
      rest = remove_span(source, starts, ends)
      ngram = span_alone(inputs, starts, ends, special[vocabulary.CLS],
                         special[vocabulary.SEP])
      rest_outputs = encoder(rest, training=training)
      outputs.update(
          sentence_embedding=self._embedding(head, sentence),
          rest_embedding=self._embedding(head, rest_outputs),
          ngram_embedding=self._embedding(
              head, encoder(ngram, training=training)),
          ngram_starts_chosen=starts, ngram_ends_chosen=ends,
          rest_inputs=rest, ngram_inputs=ngram)
      if config.rest_mlm_weight > 0:
        outputs["rest_mlm_logits"] = head(
            rest_outputs["sequence_output"],
            shift_past_span(positions, starts, ends), None)
    return outputs

  def _embedding(self, head, encoder_outputs):
    """E of one input, `[batch, hidden]` (`sentence_embedding`)."""
    mode = self.config.sentence_embedding
    if mode == "encoder":
      return encoder_outputs["default"]
    if mode == "cls":
      return encoder_outputs["sequence_output"][:, 0]
    return head.pool(encoder_outputs["sequence_output"])

  def _mlm_loss(self, outputs):
    return base.global_masked_lm_loss(outputs["masked_lm_ids"],
                                      outputs["mlm_logits"],
                                      outputs["masked_lm_weights"])

  def _misad_loss(self, outputs):
    return misad_loss.misad_loss(
        outputs["ngram_embedding"], outputs["rest_embedding"],
        outputs["sentence_embedding"], self.config.normalization)

  def compute_loss(self, features, outputs):
    del features
    loss = self.config.mlm_weight * self._mlm_loss(outputs)
    if "ngram_embedding" in outputs:
      loss += self.config.misad_weight * self._misad_loss(outputs)
    if "rest_mlm_logits" in outputs:
      loss += self.config.rest_mlm_weight * base.global_masked_lm_loss(
          outputs["masked_lm_ids"], outputs["rest_mlm_logits"],
          outputs["masked_lm_weights"])
    return loss

  def build_metrics(self):
    return [tf_keras.metrics.SparseCategoricalAccuracy(
                name="masked_lm_accuracy"),
            tf_keras.metrics.Mean(name="mlm_loss"),
            tf_keras.metrics.Mean(name="misad_mse")]

  def update_metrics(self, metrics, features, outputs):
    metrics["masked_lm_accuracy"].update_state(
        outputs["masked_lm_ids"], outputs["mlm_logits"],
        outputs["masked_lm_weights"])
    metrics["mlm_loss"].update_state(self._mlm_loss(outputs))
    if "ngram_embedding" in outputs:
      metrics["misad_mse"].update_state(self._misad_loss(outputs))

  def dummy_features(self, batch_size: int = 1):
    ids = tf.ones([batch_size, self.tokenization.seq_length], tf.int32)
    slots = self.config.train_data.max_ngrams_per_sentence
    return dict(input_word_ids=ids, input_mask=ids,
                input_type_ids=tf.zeros_like(ids),
                ngram_starts=tf.ones([batch_size, slots], tf.int32),
                ngram_ends=tf.fill([batch_size, slots], 2),
                ngram_weights=tf.ones([batch_size, slots], tf.float32))
