"""Input pipelines of the InfoXLM objectives (Chi et al. 2021, sections 3-4).

  * MMLM (3.1): monolingual lines of several languages (`input_path`
    "en=file,de=dir,..."), sampled by language with p_l ~ (n_l/n)^0.7
    (section 3.4, `sampling_exponent`), packed "[CLS] text [SEP]" and masked
    with the garden's BERT masking (`data_pipelines/masking.py`).
  * TLM (3.2): translation pairs (the bitext readers of
    `data_pipelines/bitext.py`) packed "[CLS] x [SEP] y [SEP]", segment ids 0
    and 1 by side, `position_ids` restarting at 0 at y (XLM), each side
    masked on its own (half of `max_predictions_per_seq` each), so both
    sides always hold masked tokens.
  * XLCo (3.3): the pair's two sides as separate encoder inputs
    (`source_*`, `target_*`, like bitext retrieval), or with `mixup` two
    pairs joined, each training pair ⟨c1, c2⟩ with "a randomly sampled
    translation pair from another parallel corpus" ⟨d1, d2⟩
    (`mixup_partner_path`, never one of `input_path`'s corpora): for each
    pair a random draw sends one side to the query
    sequence and the other to the key sequence, in a random order on each,
    so ⟨c1 d1, c2 d2⟩ and ⟨c1 d2, d1 c2⟩ both occur (the paper's two
    examples). The reference code (`xlco_dataset.py`) keeps the source sides
    together (⟨c1 d1, c2 d2⟩ in either order); we follow the paper, whose
    draws include the code's.

With several comma-separated bitext files (or `|` pairs) the pairs are
sampled by corpus with the same exponent. With `seed` set, masks and mixup
draws come from (seed, batch index): a resumed run sees the same batches.
"""
import dataclasses
import os
from typing import Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from cmlm.data_pipelines import bitext
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import graph_map
from cmlm.data_pipelines import masking
from cmlm.data_pipelines import text_lines
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from cmlm.data_pipelines.bitext_dataloader import BitextDataConfig


@dataclasses.dataclass
class InfoXlmDataConfig(BitextDataConfig):
  """Data of an InfoXLM objective.

  Attributes:
    input_path: MMLM: "lang=path,..." (a path is a file, a directory of
      *.txt or a glob; one text per non-empty line). TLM and XLCo: a bitext
      spec (`data_pipelines/bitext.py`), comma-separated corpora.
    sampling_exponent: alpha of p_l ~ (n_l/n)^alpha over languages (MMLM) or
      corpora (TLM, XLCo); 0.7 in section 3.4; 1 samples by size.
    max_predictions_per_seq, masking_rate: MMLM and TLM masking (BERT's
      15%); TLM gives each side half of the predictions.
    mixup: XLCo's mixup contrast (two pairs per example).
    mixup_partner_path: with `mixup`, the bitext spec of the other parallel
      corpus (or corpora) the partner pair is drawn from (section 3.3);
      required, and none of its corpora may be one of `input_path`'s.
  """
  sampling_exponent: float = 0.7
  max_predictions_per_seq: int = 20
  masking_rate: float = 0.15
  mixup: bool = False
  mixup_partner_path: str = ""


def validate_config(params: InfoXlmDataConfig,
                    tokenization_config: tokenization.TokenizationConfig,
                    owner: str, monolingual: bool = False,
                    vocab: Optional[vocabulary.VocabularyFile] = None
                    ) -> None:
  """One clear sentence per problem, before any data is read (`vocab`: the
  tokenization's vocabulary file, already read)."""
  if not params.input_path:
    expected = ("'lang=path,...' monolingual text" if monolingual else
                "TSV files or 'source_file|target_file' pairs")
    raise ValueError(f"{owner}.input_path is empty; give {expected}.")
  tokenization_config.check(vocab=vocab)
  if params.sampling_exponent < 0:
    raise ValueError(f"{owner}.sampling_exponent must be >= 0, got "
                     f"{params.sampling_exponent}.")
  if params.global_batch_size < 1:
    raise ValueError(f"{owner}.global_batch_size must be 1 or more, got "
                     f"{params.global_batch_size}.")
  if not 0 < params.masking_rate <= 1:
    raise ValueError(f"{owner}.masking_rate must be in (0, 1], got "
                     f"{params.masking_rate}.")
  if params.max_predictions_per_seq < 2:
    raise ValueError(f"{owner}.max_predictions_per_seq must be 2 or more, "
                     f"got {params.max_predictions_per_seq}.")
  if params.mixup:
    check_mixup_partner(params, owner)
  if monolingual:
    for part in params.input_path.split(","):
      if part.strip() and "=" not in part:
        raise ValueError(f"{owner}.input_path part {part.strip()!r} names no "
                         "language; write it as lang=path.")


def _corpus_files(path_spec: str) -> List[List[str]]:
  """The files of each comma-separated corpus of a bitext spec (a TSV,
  a glob, or `source|target`), as real paths."""
  corpora = []
  for part in (p.strip() for p in path_spec.split(",") if p.strip()):
    names = ([s.strip() for s in part.split("|", 1)] if "|" in part else
             bitext.expand_files(part))
    corpora.append([os.path.realpath(name) for name in names])
  return corpora


def check_mixup_partner(params: InfoXlmDataConfig, owner: str) -> None:
  """Mixup's partner corpus is given, exists and is not a training corpus."""
  if not params.mixup_partner_path:
    raise ValueError(f"{owner}.mixup_partner_path is empty; mixup needs "
                     "another parallel corpus to draw the partner pair "
                     "from (a bitext spec).")
  training = {path for files in _corpus_files(params.input_path)
              for path in files}
  for files in _corpus_files(params.mixup_partner_path):
    for path in files:
      if not os.path.isfile(path):
        raise ValueError(f"{owner}.mixup_partner_path names {path}, which "
                         "is not a file.")
      if path in training:
        raise ValueError(f"{owner}.mixup_partner_path names {path}, a "
                         "corpus of input_path; the partner pair comes "
                         "from another parallel corpus.")


def sampling_probabilities(sizes: Sequence[int], exponent: float
                           ) -> List[float]:
  """p_l = q_l^a / sum_k q_k^a with q_l = n_l / n (section 3.4)."""
  sizes = np.asarray(sizes, np.float64)
  if not len(sizes) or np.any(sizes <= 0):
    raise ValueError(f"Every language or corpus needs data; sizes {sizes}.")
  shares = (sizes / sizes.sum()) ** exponent
  return list(shares / shares.sum())


def read_monolingual(input_path: str) -> Dict[str, List[str]]:
  """{language: its non-empty lines} of "lang=path,..." (UTF-8 files)."""
  texts = {}
  for part in (p.strip() for p in input_path.split(",") if p.strip()):
    language, _, path_spec = part.partition("=")
    lines = texts.setdefault(language.strip(), [])
    for path in corpus.expand_path_spec(path_spec.strip()):
      with open(path, "rb") as f:
        for number, raw in enumerate(text_lines.iter_lines(f), start=1):
          try:
            line = raw.decode("utf-8").strip()
          except UnicodeDecodeError:
            raise corpus.CorpusError(
                f"{path}:{number} is not valid UTF-8 text.") from None
          if line:
            lines.append(line)
  for language, lines in texts.items():
    if not lines:
      raise corpus.CorpusError(f"The {language} text of {input_path} holds "
                               "no line.")
  return texts


def read_corpora(params: InfoXlmDataConfig, path_spec: Optional[str] = None
                 ) -> List[List[tuple]]:
  """The translation pairs of each comma-separated corpus of `path_spec`
  (default: input_path)."""
  path_spec = params.input_path if path_spec is None else path_spec
  return [bitext.read_bitext(part.strip(), params.source_column,
                             params.target_column, params.header)
          for part in path_spec.split(",") if part.strip()]


def _sampled(sources: List[tf.data.Dataset], sizes: List[int],
             params: InfoXlmDataConfig, input_context) -> tf.data.Dataset:
  """One stream over `sources`, by language/corpus sampling when training."""
  shards = []
  for dataset, size in zip(sources, sizes):
    if input_context and input_context.num_input_pipelines > 1:
      dataset = dataset.shard(input_context.num_input_pipelines,
                              input_context.input_pipeline_id)
    if params.is_training:
      dataset = dataset.shuffle(size, seed=params.seed,
                                reshuffle_each_iteration=True).repeat()
    shards.append(dataset)
  if len(shards) == 1:
    return shards[0]
  if not params.is_training:
    combined = shards[0]
    for dataset in shards[1:]:
      combined = combined.concatenate(dataset)
    return combined
  return tf.data.Dataset.sample_from_datasets(
      shards, sampling_probabilities(sizes, params.sampling_exponent),
      seed=params.seed)


def _batch_size(params, input_context) -> int:
  return (input_context.get_per_replica_batch_size(params.global_batch_size)
          if input_context else params.global_batch_size)


def _seeded(dataset: tf.data.Dataset, params) -> tf.data.Dataset:
  """(batch, seed) elements: a stateless [2] seed from (seed, batch index)
  when `params.seed` is set, else None-like -1 seeds (stateful draws)."""
  base = -1 if params.seed is None else int(params.seed)
  return graph_map.graph_map(
      dataset.enumerate(),
      lambda index, batch: (batch, tf.stack([tf.constant(base, tf.int64),
                                             index])))


def _seed_or_none(seed, params, salt: int):
  if params.seed is None:
    return None
  return seed + tf.constant([0, salt], tf.int64) * (1 << 40)


def mask_segments(packed: Dict[str, tf.Tensor], segments: Sequence[int],
                  params: InfoXlmDataConfig, tokenizer, seed=None):
  """Masks each segment of `packed` on its own (BERT's procedure,
  `masking.mask_tokens`), `max_predictions_per_seq / len(segments)`
  predictions each; returns the MLM features."""
  word_ids = packed["input_word_ids"]
  per_segment = params.max_predictions_per_seq // len(segments)
  positions, ids, weights = [], [], []
  for index, segment in enumerate(segments):
    in_segment = tf.logical_and(packed["input_mask"] > 0,
                                tf.equal(packed["input_type_ids"], segment))
    segment_seed = (None if seed is None else
                    seed + tf.constant([0, index + 1], tf.int64))
    word_ids, p, i, w = masking.mask_tokens(
        word_ids, tf.cast(in_segment, tf.int32),
        max_predictions_per_seq=per_segment,
        masking_rate=params.masking_rate, mask_token_id=tokenizer.mask_id,
        vocab_size=tokenizer.vocab_size,
        special_token_ids=tokenizer.special_token_ids, seed=segment_seed)
    positions.append(p)
    ids.append(i)
    weights.append(w)
  features = dict(packed, input_word_ids=word_ids,
                  masked_lm_positions=tf.concat(positions, 1),
                  masked_lm_ids=tf.concat(ids, 1),
                  masked_lm_weights=tf.concat(weights, 1))
  return features


def pack_pair(tokenizer, first: tf.RaggedTensor, second: tf.RaggedTensor,
              same_segment: bool = False) -> Dict[str, tf.Tensor]:
  """"[CLS] first [SEP] second [SEP]" padded to seq_length, both trimmed
  round-robin to fit; `input_type_ids` 0 then 1 (0 throughout with
  `same_segment`) and `position_ids` restarting at 0 at `second`."""
  trimmed = tf_text.RoundRobinTrimmer(
      max_seq_length=tokenizer.seq_length - 3).trim([first, second])
  ids, segments = tf_text.combine_segments(
      trimmed, start_of_sequence_id=tokenizer.cls_id,
      end_of_segment_id=tokenizer.sep_id)
  word_ids, mask = tf_text.pad_model_inputs(
      ids, max_seq_length=tokenizer.seq_length, pad_value=tokenizer.pad_id)
  type_ids, _ = tf_text.pad_model_inputs(
      segments, max_seq_length=tokenizer.seq_length, pad_value=0)
  first_length = tf.cast(trimmed[0].row_lengths(), tf.int32) + 2  # [CLS] [SEP]
  positions = tf.range(tokenizer.seq_length)[tf.newaxis, :]
  position_ids = tf.where(type_ids > 0, positions - first_length[:, None],
                          positions)
  return dict(input_word_ids=tf.cast(word_ids, tf.int32),
              input_mask=tf.cast(mask, tf.int32),
              input_type_ids=(tf.zeros_like(word_ids, tf.int32)
                              if same_segment else tf.cast(type_ids,
                                                           tf.int32)),
              position_ids=tf.cast(position_ids, tf.int32))


def build_mmlm_dataset(params: InfoXlmDataConfig,
                       tokenization_config: tokenization.TokenizationConfig,
                       input_context=None,
                       vocab: Optional[vocabulary.VocabularyFile] = None
                       ) -> tf.data.Dataset:
  """Masked monolingual lines, languages sampled by `sampling_exponent`."""
  texts = read_monolingual(params.input_path)
  sizes = [len(lines) for lines in texts.values()]
  dataset = _sampled([tf.data.Dataset.from_tensor_slices(lines)
                      for lines in texts.values()], sizes, params,
                     input_context)
  dataset = dataset.batch(_batch_size(params, input_context),
                          drop_remainder=params.is_training or
                          params.drop_remainder)
  tokenizer = tokenization.build_wordpiece_tokenizer(
      tokenization_config, vocab=vocab)

  def encode(lines, seed):
    packed = tokenizer.tokenize_and_pack(lines)
    return mask_segments(packed, [0], params, tokenizer,
                         _seed_or_none(seed, params, 1))

  return graph_map.graph_map(
      _seeded(dataset, params), encode,
      num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def _pair_stream(params, input_context, path_spec=None) -> tf.data.Dataset:
  corpora = read_corpora(params, path_spec)
  sources = [tf.data.Dataset.from_tensor_slices(
      ([s for s, _ in pairs], [t for _, t in pairs])) for pairs in corpora]
  return _sampled(sources, [len(pairs) for pairs in corpora], params,
                  input_context)


def build_tlm_dataset(params: InfoXlmDataConfig,
                      tokenization_config: tokenization.TokenizationConfig,
                      input_context=None,
                      vocab: Optional[vocabulary.VocabularyFile] = None
                      ) -> tf.data.Dataset:
  """Masked concatenated translation pairs with positions reset per side."""
  dataset = _pair_stream(params, input_context).batch(
      _batch_size(params, input_context),
      drop_remainder=params.is_training or params.drop_remainder)
  tokenizer = tokenization.build_wordpiece_tokenizer(
      tokenization_config, vocab=vocab)

  def encode(pair, seed):
    source, target = pair
    packed = pack_pair(tokenizer, tokenizer.tokenize(source),
                       tokenizer.tokenize(target))
    return mask_segments(packed, [0, 1], params, tokenizer,
                         _seed_or_none(seed, params, 2))

  return graph_map.graph_map(
      _seeded(dataset, params), encode,
      num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def _mixup_sides(pairs, partners, seed, params):
  """Two pairs per example -> (query texts, key texts) as two segments each
  (see the module doc). `pairs`: the training pairs (sources [b], targets
  [b]); `partners`: the other corpus' pairs, the same shapes."""
  c1, c2 = pairs  # [b]
  # [b]: a last, partial batch (not training) takes as many partners.
  d1, d2 = (side[:tf.shape(c1)[0]] for side in partners)
  shape = tf.shape(c1)
  if params.seed is None:
    bits = tf.random.uniform([4, shape[0]], maxval=2, dtype=tf.int32) > 0
  else:
    bits = tf.random.stateless_uniform(
        [4, shape[0]], _seed_or_none(seed, params, 3), maxval=2,
        dtype=tf.int32) > 0
  # Which side of each pair goes to the query; then the query's and the
  # key's order.
  query_c, key_c = tf.where(bits[0], c2, c1), tf.where(bits[0], c1, c2)
  query_d, key_d = tf.where(bits[1], d2, d1), tf.where(bits[1], d1, d2)
  first_query = tf.where(bits[2], query_d, query_c)
  second_query = tf.where(bits[2], query_c, query_d)
  first_key = tf.where(bits[3], key_d, key_c)
  second_key = tf.where(bits[3], key_c, key_d)
  return (first_query, second_query), (first_key, second_key)


def build_xlco_dataset(params: InfoXlmDataConfig,
                       tokenization_config: tokenization.TokenizationConfig,
                       input_context=None,
                       vocab: Optional[vocabulary.VocabularyFile] = None
                       ) -> tf.data.Dataset:
  """`source_*` / `target_*` encoder inputs of translation pairs (mixup:
  each with a partner pair of `mixup_partner_path`, see the module doc)."""
  batch_size = _batch_size(params, input_context)
  drop = params.is_training or params.drop_remainder
  dataset = _pair_stream(params, input_context).batch(batch_size,
                                                      drop_remainder=drop)
  if params.mixup:
    check_mixup_partner(params, "mixup")
    # The partner corpus is drawn on its own, with its own shuffle seed.
    partner_params = (params if params.seed is None else
                      params.replace(seed=params.seed + 1))
    partners = _pair_stream(partner_params, input_context,
                            params.mixup_partner_path).batch(
                                batch_size, drop_remainder=drop)
    if not params.is_training:
      partners = partners.repeat()
    dataset = tf.data.Dataset.zip((dataset, partners))
  tokenizer = tokenization.build_wordpiece_tokenizer(
      tokenization_config, vocab=vocab)

  def encode(pair, seed):
    if params.mixup:
      query, key = _mixup_sides(pair[0], pair[1], seed, params)
      sides = {"source": pack_pair(tokenizer, tokenizer.tokenize(query[0]),
                                   tokenizer.tokenize(query[1]),
                                   same_segment=True),
               "target": pack_pair(tokenizer, tokenizer.tokenize(key[0]),
                                   tokenizer.tokenize(key[1]),
                                   same_segment=True)}
    else:
      sides = {"source": tokenizer.tokenize_and_pack(pair[0]),
               "target": tokenizer.tokenize_and_pack(pair[1])}
    return {f"{side}_{name}": value for side, packed in sides.items()
            for name, value in packed.items() if name != "position_ids"}

  return graph_map.graph_map(
      _seeded(dataset, params), encode,
      num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def first_lines(input_path: str, max_lines: int) -> List[str]:
  """Up to `max_lines` lines of each language of an MMLM input_path, for
  the tokenizer check before training."""
  lines = []
  for part in (p.strip() for p in input_path.split(",") if p.strip()):
    path_spec = part.partition("=")[2].strip()
    for path in corpus.expand_path_spec(path_spec)[:1]:
      if not os.path.isfile(path):
        continue
      with open(path, "rb") as f:
        for raw in text_lines.iter_lines(f):
          text = raw.decode("utf-8", errors="replace").strip()
          if text:
            lines.append(text)
          if len(lines) >= max_lines:
            return lines
  return lines
