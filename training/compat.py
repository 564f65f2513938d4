"""Runs written by older versions of the garden, read in today's layout.

Every reader of a run goes through `run_dir` (its params.yaml) and
`checkpoints` (its encoder item); each asks here for what an older layout
calls by another name. One function per old layout:

- `upgrade_params`: the params.yaml of a contextual lensing run written
  before lenses became pooling heads says `task.model.lens`, with a
  `type` of "none" for no lens; today it is `task.model.pooling_head`.
- `stored_encoder_part`: the checkpoints of those runs keep the pooling head
  as the encoder's `lens` (`encoder/lens/...`); today it is
  `encoder/pooling_head/...`.

An upgrade reads the old layout only; nothing is ever written in it.
"""
from typing import Collection, Optional

# The encoder parts that older checkpoints keep under another name: the
# contextual lensing runs called the pooling head the encoder's `lens`.
_OLDER_ENCODER_PART_NAMES = {"pooling_head": "lens"}


def upgrade_params(saved: dict) -> dict:
  """A params.yaml of an older version of the garden, in today's keys: the
  contextual lensing runs' `task.model.lens` is `task.model.pooling_head`
  (type "none" dropped: no head)."""
  model = saved.get("task", {}).get("model", {})
  if "lens" in model:
    lens = model.pop("lens")
    if lens.get("type", "none") != "none":
      model["pooling_head"] = lens
  return saved


def stored_encoder_part(part: str, stored: Collection[str]) -> Optional[str]:
  """The name under which a checkpoint whose encoder item holds the parts
  `stored` keeps the encoder's `part`: today's name, or the one an older
  layout gave it (`lens` for the `pooling_head`); None when it has none."""
  for name in (part, _OLDER_ENCODER_PART_NAMES.get(part)):
    if name in stored:
      return name
  return None
