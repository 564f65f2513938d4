r"""Embed a file of sentences with an exported model (export/encode.py): row
i of the float32 .npy written is the embedding of line i.

    python -m cmlm encode --model=exports/tiny --input=sentences.txt \
        --output=embeddings.npy [--batch_size=256] [--nonormalize]
"""
from absl import flags

from cmlm.commands import flag_parsing

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("model", None, "An export directory (encoder/ + "
                    "preprocessor/), a text-to-embedding SavedModel, or a TF "
                    "Serving base path (its highest version).",
                    flag_values=FLAGS)
flags.DEFINE_string("input", None, "A text file, one sentence a line (UTF-8).",
                    flag_values=FLAGS)
flags.DEFINE_string("output", None, "The .npy file of embeddings to write.",
                    flag_values=FLAGS)
flags.DEFINE_integer("batch_size", 256, "Sentences per batch.",
                     flag_values=FLAGS)
flags.DEFINE_bool("normalize", True, "L2-normalise the written embeddings.",
                  flag_values=FLAGS)
flags.DEFINE_bool("overwrite", False, "Replace --output when it exists.",
                  flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("encode", __doc__, FLAGS, argv)
  from export import encode  # pylint: disable=g-import-not-at-top
  embeddings = encode.encode_file(
      FLAGS.model, FLAGS.input, FLAGS.output, batch_size=FLAGS.batch_size,
      normalize=FLAGS.normalize, overwrite=FLAGS.overwrite)
  print(f"Wrote {FLAGS.output}: float32 {list(embeddings.shape)}")
