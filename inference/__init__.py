"""Reading models: any model of the garden (or of TF-Hub) to embeddings.

The layer below export (which only writes) and evaluation (which only
measures), above training (whose runs it reads):

  layout            an export as readers see it: its parts, `current`,
                    `export_info.json`, the serving signature
  run_record        a training run read once: params, checkpoint, its
                    vocabulary, origin, evaluation report; the one record
                    export, the card, `load_embedder` and `cmlm.mteb_model`
                    take
  run_facts         what a run says of itself: license, languages, training
                    data by name (the card's and MTEB's metadata)
  embedders         `load_embedder`: every model kind and backend as one
                    `Embedder` (encode, eval, pcr, the demo and
                    `cmlm.SentenceEncoder` load through it)
  artifact_runtime  the TFLite / ONNX artifacts run without TensorFlow
                    (ai-edge-litert, onnxruntime), tokenized by
                    `data_pipelines.plain_tokenizer`
  input_paths       a file to read, a model to load: a wrong path said in
                    one line before any work (without TensorFlow)
  integrity         an export's files checked against what export recorded
                    (sizes, SHA-256) before they load; a damaged one named
                    with the export command that writes it again
  text_inputs       encode's readers: .txt, .jsonl, .csv, .tsv, stdin
  postprocess       truncate, L2-normalise, quantize (`quantization`)
  embedding_outputs encode's writers: .npy, .jsonl, .parquet
  encode_files      `python -m cmlm encode`: sentences -> embeddings
  progress          the progress line of long encodings
  nearest_neighbours  k nearest neighbours on FAISS (flat, IVF, HNSW), by
                    shards, memory-mapped; recall against exact search
  bitext_mining     the margin criterion and LASER's candidate modes
  mine_files        `python -m cmlm mine`: two corpora -> mined pairs (TSV)
  dask_mining       mining's search shards on a dask.distributed cluster
  dask_encoding     mining's encode shards on a dask.distributed cluster
"""
