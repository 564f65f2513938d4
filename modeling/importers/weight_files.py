"""Reads (and writes) a Hugging Face checkpoint's tensors as NumPy arrays.

Two formats hold a Hugging Face model's weights:

* `model.safetensors` (or shards listed in `model.safetensors.index.json`):
  an 8-byte little-endian header length, a JSON header naming each tensor's
  dtype, shape and byte range, then the raw little-endian buffers. It is read
  with NumPy alone (the `safetensors` package is not needed at run time), so
  importing never depends on PyTorch.
* `pytorch_model.bin`: a pickled PyTorch state dict, readable only with
  PyTorch; it is accepted when `torch` can be imported.
"""
import json
import os
from typing import Dict

import numpy as np

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_BIN = "pytorch_model.bin"

# safetensors dtype names -> NumPy little-endian dtypes. BF16 has no NumPy
# dtype: its 16 bits are the high half of a float32.
_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8",
           "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def read_safetensors(path: str) -> Dict[str, np.ndarray]:
  """All tensors of one .safetensors file, by name (float types as given)."""
  with open(path, "rb") as f:
    data = f.read()
  if len(data) < 8:
    raise ValueError(f"{path} is not a safetensors file (too short).")
  header_length = int.from_bytes(data[:8], "little")
  if not 2 <= header_length <= len(data) - 8:
    raise ValueError(f"{path} is not a safetensors file (bad header length "
                     f"{header_length}).")
  try:
    header = json.loads(data[8:8 + header_length])
  except (UnicodeDecodeError, json.JSONDecodeError):
    raise ValueError(f"{path} is not a safetensors file (its header is not "
                     "JSON).") from None
  buffer = memoryview(data)[8 + header_length:]
  ends = [entry["data_offsets"][1] for name, entry in header.items()
          if name != "__metadata__"]
  if ends and max(ends) > len(buffer):
    raise ValueError(f"{path} is truncated: its header places tensors up to "
                     f"byte {max(ends)} of the data, which holds "
                     f"{len(buffer)}; download it again.")
  tensors = {}
  for name, entry in header.items():
    if name == "__metadata__":
      continue
    start, end = entry["data_offsets"]
    raw = buffer[start:end]
    if entry["dtype"] == "BF16":
      bits = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
      array = bits.view(np.float32)
    elif entry["dtype"] in _DTYPES:
      array = np.frombuffer(raw, _DTYPES[entry["dtype"]])
    else:
      raise ValueError(f"{path}: tensor {name} has the unsupported dtype "
                       f"{entry['dtype']}.")
    tensors[name] = array.reshape(entry["shape"])
  return tensors


def write_safetensors(tensors: Dict[str, np.ndarray], path: str) -> None:
  """Writes float32 `tensors` as one .safetensors file (`read_safetensors`'
  layout: names in sorted order, buffers packed in that order, the header
  padded with spaces to a multiple of 8 bytes, as the `safetensors` package
  writes it), with NumPy alone.

  Examples:
    >>> write_safetensors({"a": np.zeros([2, 3], np.float32)}, "m.safetensors")
    >>> read_safetensors("m.safetensors")["a"].shape
    (2, 3)
  """
  header, buffers, offset = {"__metadata__": {"format": "pt"}}, [], 0
  for name in sorted(tensors):
    data = np.ascontiguousarray(tensors[name], "<f4").tobytes()
    header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                    "data_offsets": [offset, offset + len(data)]}
    buffers.append(data)
    offset += len(data)
  encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
  encoded += b" " * (-len(encoded) % 8)
  with open(path, "wb") as f:
    f.write(len(encoded).to_bytes(8, "little"))
    f.write(encoded)
    for data in buffers:
      f.write(data)


def read_pytorch_bin(path: str) -> Dict[str, np.ndarray]:
  """A pickled PyTorch state dict, when PyTorch is installed."""
  try:
    import torch  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError(
        f"{path} is a PyTorch pickle and reading it needs PyTorch, which is "
        "not installed; install torch, or convert the checkpoint to "
        "model.safetensors.") from None
  state = torch.load(path, map_location="cpu", weights_only=True)
  return {name: tensor.float().numpy() if tensor.is_floating_point()
          else tensor.numpy() for name, tensor in state.items()}


def read_weights(model_dir: str) -> Dict[str, np.ndarray]:
  """The tensors of a Hugging Face model directory, safetensors first."""
  index = os.path.join(model_dir, SAFETENSORS_INDEX)
  if os.path.isfile(os.path.join(model_dir, SAFETENSORS)):
    return read_safetensors(os.path.join(model_dir, SAFETENSORS))
  if os.path.isfile(index):
    with open(index, encoding="utf-8") as f:
      shards = sorted(set(json.load(f)["weight_map"].values()))
    tensors = {}
    for shard in shards:
      tensors.update(read_safetensors(os.path.join(model_dir, shard)))
    return tensors
  if os.path.isfile(os.path.join(model_dir, PYTORCH_BIN)):
    return read_pytorch_bin(os.path.join(model_dir, PYTORCH_BIN))
  raise FileNotFoundError(
      f"{model_dir} holds no weights: expected {SAFETENSORS}, "
      f"{SAFETENSORS_INDEX} or {PYTORCH_BIN}.")
