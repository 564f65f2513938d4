"""The model cards of the sentence-transformers folder.

`folder_card(facts, manifest)` is the folder's own `README.md`: the Hugging
Face Hub's front matter with `library_name: sentence-transformers`, the
export card's overview, license and citation (`export.cards.model_card`), and two
snippets that run as written from the folder: sentence-transformers, and
onnxruntime + `tokenizers` without torch nor the garden
(`usage_snippets`, run by tests/export/test_sentence_transformers_folder.py).
The export's own card gives the folder a few lines
(`artifact_card.sentence_transformers_section`).
"""
from typing import List

from cmlm.export.cards import artifact_card
from cmlm.export.cards import model_card
from cmlm.export.cards.card_facts import CardFacts

TAGS = ("sentence-transformers", "sentence-similarity", "feature-extraction",
        "transformers", "onnx", "safetensors")
# The folder's Pooling, in NumPy: states [batch, time, hidden], mask
# [batch, time, 1].
_POOLING = {
    "mean": "(states * mask).sum(axis=1) / mask.sum(axis=1)",
    "cls": "states[:, 0]",
    "max": "np.where(mask > 0, states, -1e9).max(axis=1)",
}


def usage_snippets(manifest: dict) -> List[List[str]]:
  """The card's Python snippets (lines, fences included): with
  sentence-transformers; and, when the folder has ONNX files, with
  onnxruntime and `tokenizers` alone.

  Examples:
    >>> [lines[1] for lines in usage_snippets(manifest)]
    ['from sentence_transformers import SentenceTransformer',
     'import numpy as np']
  """
  sentence_transformers = [
      "```python",
      "from sentence_transformers import SentenceTransformer",
      "model = SentenceTransformer(\".\")  # this folder, or its Hub name",
      "embeddings = model.encode([\"A sentence.\", \"Another one.\"])",
      "print(embeddings.shape)",
      "```"]
  if not manifest.get("onnx"):
    return [sentence_transformers]
  onnx = [
      "```python",
      "import numpy as np",
      "import onnxruntime",
      "from tokenizers import Tokenizer",
      "tokenizer = Tokenizer.from_file(\"tokenizer.json\")",
      f"session = onnxruntime.InferenceSession(\"{manifest['onnx']['float32']}"
      "\")",
      "batch = tokenizer.encode_batch([\"A sentence.\", \"Another one.\"])",
      "ids = np.array([e.ids for e in batch])",
      "mask = np.array([e.attention_mask for e in batch])",
      "states = session.run(None, {\"input_ids\": ids, \"attention_mask\": "
      "mask, \"token_type_ids\": 0 * ids})[0]",
      "mask = mask[:, :, None]",
      f"embeddings = {_POOLING[manifest['pooling']]}  # "
      f"{manifest['pooling']} pooling"]
  if manifest.get("normalize"):
    onnx.append("embeddings /= np.linalg.norm(embeddings, axis=1, "
                "keepdims=True)")
  onnx += ["print(embeddings.shape)", "```"]
  return [sentence_transformers, onnx]


def folder_card(facts: CardFacts, manifest: dict) -> str:
  """The folder's README.md (module docstring).

  Examples:
    >>> folder_card(facts, manifest).splitlines()[0]
    '---'
  """
  seq_length = facts.params.task.tokenization.seq_length
  pipeline = (f"Transformer -> {manifest['pooling']} pooling" +
              (" -> Normalize" if manifest.get("normalize") else ""))
  snippets = usage_snippets(manifest)
  lines = model_card.front_matter(facts, "sentence-transformers", TAGS)
  lines += ["", f"# {facts.title}", "", "This folder is the model as "
            "sentence-transformers and Hugging Face transformers read it, "
            "written by the CMLM garden's `python -m cmlm export "
            "--formats=...,sentence_transformers`.", ""]
  lines += model_card.overview(facts)
  lines += ["", "## Usage", "",
            f"sentence-transformers ({pipeline}; sentences longer than "
            f"{seq_length} tokens are cut), from this folder:", ""]
  lines += snippets[0]
  if len(snippets) > 1:
    lines += ["", "Without torch: onnxruntime and Hugging Face's "
              "`tokenizers` (any of its bindings reads `tokenizer.json`: "
              "Rust, Node, Java, ...), from this folder:", ""]
    lines += snippets[1]
  lines += [
      "", "## Files", "",
      "- `config.json`, `model.safetensors`: the transformer as Hugging "
      "Face's `BertModel` (`hidden_act: gelu_new`, GELU's tanh form, which "
      "the garden trains with).",
      "- `tokenizer.json`: the garden's tokenization, exactly (its "
      "normalisation, WordPiece and `[CLS] ... [SEP]`); `vocab.txt` and "
      "`tokenizer_config.json` beside it. The literal text `[CLS]` is "
      "tokenized as text (`split_special_tokens`).",
      "- `modules.json`, `1_Pooling/`, `sentence_bert_config.json`, "
      "`config_sentence_transformers.json`: sentence-transformers' "
      f"pipeline ({pipeline}), cosine similarity."]
  if manifest.get("onnx"):
    lines.append(
        f"- `{manifest['onnx']['float32']}`, `{manifest['onnx']['int8']}`: "
        "the transformer (`input_ids`, `attention_mask`, `token_type_ids` "
        "-> `last_hidden_state`), float32 and int8 (QInt8 weights per "
        "output channel, activations quantized per call; any CPU). "
        "sentence-transformers reads them with `backend=\"onnx\"` (3.2 or "
        "later, with its `onnx` extra), the int8 one with "
        f"`model_kwargs={{\"file_name\": \"{manifest['onnx']['int8']}\"}}`."
        + artifact_card.folder_agreement(manifest))
  lines += ["", "## License", ""] + model_card.license_lines(facts)
  lines += ["", "## Citation", ""] + model_card.citation_lines(facts)
  return "\n".join(lines) + "\n"

