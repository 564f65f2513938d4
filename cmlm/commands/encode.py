r"""Embed a file of sentences with a model (inference/encode_files.py): row i of the
array written is the embedding of sentence i.

    python -m cmlm encode --model=exports/tiny --input=sentences.txt \
        --output=embeddings.npy [--batch_size=256] [--nonormalize]
    python -m cmlm encode --model=exports/tiny --backend=tflite --quantized \
        --input=sentences.txt --output=embeddings.npy
    python -m cmlm encode --model=runs/tiny --input=data.jsonl \
        --text_field=sentence --output=out.parquet --precision=int8 \
        --calibration=corpus_embeddings.npy --truncate_dim=64
    cat sentences.txt | python -m cmlm encode --model=M --input=- --output=e.npy

--input: .txt (one sentence a line), .jsonl (--text_field), .csv/.tsv
(--column, --header), or - for standard input (--input_format). --output:
.npy, .jsonl ({"text", "embedding"} a line) or .parquet. Embeddings are
truncated (--truncate_dim), then L2-normalised (--normalize), then
quantized (--precision, sentence-transformers' quantize_embeddings).
A file of any size streams: it is checked and counted in one pass, then
read, embedded (sentences of about one length batched together) and
written 32 batches at a time, so memory does not grow with the file.
"""
from absl import flags

from cmlm.commands import flag_parsing
from cmlm.data_pipelines import atomic_file
from cmlm.inference import embedding_outputs
from cmlm.inference import input_paths

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("model", None, "An export directory (encoder/ + "
                    "preprocessor/), a text-to-embedding SavedModel, a TF "
                    "Serving base path (its highest version), a training "
                    "--model_dir, or ENCODER_DIR,PREPROCESSOR_DIR.",
                    flag_values=FLAGS)
flags.DEFINE_string("checkpoint", None, "With a training --model: a "
                    "checkpoint prefix, e.g. MODEL_DIR/ckpt-1000 (default: "
                    "the latest).", flag_values=FLAGS)
flags.DEFINE_string("input", None, "The sentences: a .txt file (one a line), "
                    ".jsonl, .csv or .tsv file (UTF-8), or - for standard "
                    "input.", flag_values=FLAGS)
flags.DEFINE_enum("input_format", "auto", ["auto", "txt", "jsonl", "csv",
                                           "tsv"],
                  "How to read --input (auto: from its extension; txt for "
                  "- and unknown extensions).", flag_values=FLAGS)
flags.DEFINE_string("text_field", "text", "jsonl: the key holding the "
                    "sentence.", flag_values=FLAGS)
flags.DEFINE_string("column", None, "csv/tsv: the sentences' column, a "
                    "header name or a 0-based index (may be left out when "
                    "rows have one cell).", flag_values=FLAGS)
flags.DEFINE_bool("header", True, "csv/tsv: the first row names the "
                  "columns (it is not encoded).", flag_values=FLAGS)
flags.DEFINE_string("output", None, "The file to write: .npy, .jsonl or "
                    ".parquet.", flag_values=FLAGS)
flags.DEFINE_enum("output_format", "auto", ["auto", "npy", "jsonl",
                                            "parquet"],
                  "How to write --output (auto: from its extension).",
                  flag_values=FLAGS)
flags.DEFINE_integer("batch_size", 256, "Sentences per batch. The input "
                     "is read, embedded and written 32 batches at a time "
                     "(sentences of about one length batched together), so "
                     "memory does not grow with the file.",
                     flag_values=FLAGS)
flag_parsing.define_backend_flags(
    FLAGS, __name__, ". Not --precision, which quantizes the embeddings written.")
flags.DEFINE_bool("normalize", True, "L2-normalise the written embeddings "
                  "(after --truncate_dim). --nonormalize is refused for a "
                  "model that normalises in its graph.", flag_values=FLAGS)
flags.DEFINE_integer("truncate_dim", None, "Keep the first N dimensions "
                     "(Matryoshka-style), before normalising.",
                     flag_values=FLAGS)
flags.DEFINE_enum("precision", "float32", ["float32", "int8", "uint8",
                                           "binary", "ubinary"],
                  "Embedding quantization, as sentence-transformers' "
                  "quantize_embeddings: int8/uint8 per-dimension buckets, "
                  "binary/ubinary one bit a dimension packed 8 to a byte.",
                  flag_values=FLAGS)
flags.DEFINE_string("calibration", None, "int8/uint8: the embeddings whose "
                    "per-dimension min and max set the buckets: a .npy of "
                    "float embeddings of this model, or a file of sentences "
                    "(read like --input) to embed; either is read a chunk "
                    "at a time. Default: the embeddings written, whose float "
                    "rows then wait in an unnamed temporary file beside "
                    "--output (4 bytes a dimension a sentence, on disk) and "
                    "are quantized in a second pass.", flag_values=FLAGS)
flags.DEFINE_bool("overwrite", False, "Replace --output when it exists.",
                  flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("encode", __doc__, FLAGS, argv)
  # What it is given, said before TensorFlow loads.
  if FLAGS.output != "-":
    atomic_file.check_output_path(FLAGS.output, "--output", False)
  embedding_outputs.check_output(FLAGS.output, FLAGS.output_format,
                                 FLAGS.overwrite)
  input_paths.check_model(FLAGS.model)
  flag_parsing.require(FLAGS, "input", "a .txt (one sentence a line), "
                       ".jsonl, .csv or .tsv file, or - for standard input")
  if FLAGS.input != "-":
    input_paths.check_file(FLAGS.input, "--input", remote=True)
  if FLAGS.calibration:  # a remote .npy is refused by its reader
    input_paths.check_file(FLAGS.calibration, "--calibration", remote=True)
  from cmlm.inference import encode_files  # pylint: disable=g-import-not-at-top
  written = encode_files.encode_file(
      FLAGS.model, FLAGS.input, FLAGS.output, batch_size=FLAGS.batch_size,
      normalize=FLAGS.normalize, overwrite=FLAGS.overwrite,
      checkpoint=FLAGS.checkpoint, input_format=FLAGS.input_format,
      text_field=FLAGS.text_field, column=FLAGS.column, header=FLAGS.header,
      output_format=FLAGS.output_format, precision=FLAGS.precision,
      truncate_dim=FLAGS.truncate_dim, calibration=FLAGS.calibration,
      backend=FLAGS.backend, quantized=FLAGS.quantized)
  print(f"Wrote {written.path}: {written.dtype} {written.shape}")
