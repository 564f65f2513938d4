"""data_pipelines package of the CMLM garden: text -> ids -> masked features.

  sentence_splitter  rule-based sentences from running text
  corpus             path spec -> documents -> sentences -> (s1, s2) pairs
  vocabulary         WordPiece vocabularies: load/check, learn, write
  text_lines         lines of text files: LF, CRLF and CR alike
  unk_rate           the [UNK] rate of a sample, both casings (tokenizer check)
  tokenization       in-graph WordPieceTokenizer (tf.Module), [CLS] .. [SEP]
  masking            BERT 80/10/10 masking of s2 (paper section 2)
  pair_tfrecords     (s1, s2) pairs as TFRecords for large corpora
  cmlm_dataloader    CmlmDataConfig, CmlmDataLoader, build_cmlm_dataset
  embedded_corpus    the English corpus and vocabulary shipped in data/
"""
