"""The model card's section on the TFLite and ONNX artifacts.

`artifact_section(manifests)` lists, for each artifact an export holds
(`export.artifacts`), its files, size, speed class and the agreement the
export measured with the SavedModel, then a snippet that runs the int8
model with its runtime alone (`int8_snippet`, run verbatim by
tests/export/test_artifacts.py). `sentence_transformers_section(manifest)`
is the card's lines on the sentence-transformers folder
(`export.sentence_transformers_folder`).
"""
from typing import Dict, List

from cmlm.inference import artifact_runtime

# What benchmarks/encode_vs_sentence_transformers.py measured (MiniLM-L6,
# batch 1, 32, 256, on a 2-core Intel Xeon with AMX;
# docs/benchmarks.md#against-the-strongest-peers-intel-xeon).
SPEED_CLASS = {
    ("tflite", "int8"): "int8; the fastest at batch 32 and 256 measured",
    ("tflite", "float32"): "float32",
    ("onnx", "int8"): "int8 with onnxruntime",
    ("onnx", "float32"): "float32 with onnxruntime",
}
# The ONNX float32 file in onnxruntime's fused kernels.
FUSED_FLOAT32_CLASS = ("float32 with onnxruntime; the fastest float32 at "
                       "batch 1, level with TFLite's at 32 and 256")
_RUNTIME = {"tflite": "`ai-edge-litert` (or TensorFlow's `tf.lite`)",
            "onnx": "`onnxruntime`"}


def _megabytes(size: int) -> str:
  return f"{size / 1e6:.1f} MB"


def int8_snippet(name: str) -> List[str]:
  """Python that embeds two sentences with `name`'s int8 model, run from
  the export directory (or an unpacked `name/`' parent)."""
  return [
      "```python",
      "from cmlm.inference import artifact_runtime  # imports no TensorFlow",
      f"model = artifact_runtime.load(\"{name}\", quantized=True)",
      "embeddings = model.embed([\"A sentence.\", \"Another one.\"], "
      "normalize=True)",
      "print(embeddings.shape, embeddings.dtype)",
      "```",
  ]


def _speed_class(name: str, precision: str, manifest: dict) -> str:
  if (name, precision) == ("onnx", "float32") and _graph(manifest):
    return FUSED_FLOAT32_CLASS
  return SPEED_CLASS[(name, precision)]


def _graph(manifest: dict) -> str:
  """", its fused kernels" for an ONNX graph in onnxruntime's fused
  operators (`export.fused_onnx`), else nothing."""
  return (", its fused kernels"
          if manifest.get("graph") == artifact_runtime.FUSED_GRAPH else "")


def artifact_section(manifests: Dict[str, dict]) -> List[str]:
  """The card's `## CPU artifacts` lines (empty without artifacts)."""
  if not manifests:
    return []
  lines = ["", "## CPU artifacts", "",
           "The encoder without its tokenizer (`input_word_ids`, `input_mask` "
           "int32 `[batch, time]` -> `default` float32 `[batch, dim]`), as "
           "TFLite or ONNX models, float32 and int8 (dynamic range: int8 "
           "weights, activations quantized per call). Tokenization is plain "
           "Python (`cmlm.data_pipelines.plain_tokenizer`, equal to the "
           "preprocessor's) reading the `vocab.txt` beside each model; the "
           "`tokenizer.json` beside it gives the same ids with Hugging "
           "Face's `tokenizers` in any language it has bindings for. "
           "Agreement: the smallest cosine to the SavedModel's embedding "
           "over the export's probe sentences (long, empty, non-Latin, "
           "emoji, controls).",
           "",
           "| file | runtime | size | speed class | agreement |",
           "|---|---|---|---|---|"]
  for name, manifest in manifests.items():
    check = manifest.get("check", {})
    for precision, file in manifest["files"].items():
      cosine = check.get(f"{precision}_min_cosine")
      lines.append(
          f"| `{name}/{file}` | {_RUNTIME[name]}{_graph(manifest)} | "
          f"{_megabytes(manifest['bytes'][precision])} | "
          f"{_speed_class(name, precision, manifest)} | "
          f"{'n/a' if cosine is None else f'cosine >= {cosine:.4f}'} |")
  first = "tflite" if "tflite" in manifests else next(iter(manifests))
  lines += ["", f"With the garden installed, `SentenceEncoder(PATH, "
            f"backend=\"{first}\", quantized=True)` and `python -m cmlm "
            f"encode --backend={first} --quantized` use them; without "
            "TensorFlow, from this directory:", ""]
  lines += int8_snippet(first)
  return lines


def folder_agreement(manifest: dict) -> str:
  """What the export measured of the sentence-transformers folder's ONNX
  files, as a sentence (empty without them).

  Examples:
    >>> folder_agreement({"check": None})
    ''
  """
  check = manifest.get("check") or {}
  if not check:
    return ""
  return (f" Over the export's {check['sentences']} probe sentences (long, "
          "empty, non-Latin, emoji, controls) the ONNX files, fed by "
          "`tokenizer.json`, give the SavedModel's embedding to a cosine of "
          f"{check['float32_min_cosine']:.6f} or more (float32) and "
          f"{check['int8_min_cosine']:.4f} (int8).")


def sentence_transformers_section(manifest: dict) -> List[str]:
  """The export card's lines on the folder (none when it was not written).

  Examples:
    >>> sentence_transformers_section({})
    []
  """
  if not manifest:
    return []
  return ["", "## sentence-transformers and Hugging Face", "",
          "`sentence_transformers/` is this model as a sentence-transformers "
          "/ Hugging Face folder (`model.safetensors`, `tokenizer.json`, "
          f"Transformer -> {manifest['pooling']} pooling"
          + (" -> Normalize" if manifest.get("normalize") else "")
          + (", ONNX float32 and int8" if manifest.get("onnx") else "")
          + "): `SentenceTransformer(\"sentence_transformers\")` loads it "
          "without the garden; its own README.md shows how."
          + folder_agreement(manifest)]
