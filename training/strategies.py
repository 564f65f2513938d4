"""The names `--strategy` and `runtime.mixed_precision_dtype` take, and the
strategy a run takes when none is given (no TensorFlow import: the command
line defines its flags with them).

`choose_for_runtime` is the one choice of a config's strategy: building the
config (`run_config.settle_strategy`) and making the strategy
(`train.make_strategy`) both call it; `choose` is its rule.
"""
import dataclasses
import json
from typing import Callable, Optional

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
PRECISIONS = ("float32", "float16", "bfloat16")
# runtime.distribution_strategy left to the hardware (`choose`).
FROM_HARDWARE = ""


@dataclasses.dataclass(frozen=True)
class Hardware:
  """What a run finds: local GPUs and TPU cores, and the tasks `TF_CONFIG`
  names (1 without it)."""
  gpus: int = 0
  tpus: int = 0
  workers: int = 1


@dataclasses.dataclass(frozen=True)
class Choice:
  """A run's `runtime.distribution_strategy`, `num_gpus` and `tpu`, and why
  (`given`, or what was found)."""
  strategy: str
  num_gpus: int
  tpu: Optional[str]
  why: str

  def line(self) -> str:
    """The line a training command prints first."""
    where = {"one_device": " on GPU 0" if self.num_gpus else " on the CPU",
             "mirrored": (f" over {self.num_gpus} GPUs" if self.num_gpus
                          else " on the CPU")}.get(self.strategy, "")
    if self.why == "given":
      return f"Strategy: {self.strategy}{where} (given)."
    return (f"Strategy: {self.strategy}{where} ({self.why}); --strategy "
            "chooses another.")


def workers_of(tf_config: str) -> int:
  """The number of tasks (chief and workers) a `TF_CONFIG` cluster names;
  1 without one, or when it is not JSON (TensorFlow then says why)."""
  try:
    cluster = json.loads(tf_config or "{}").get("cluster", {})
    return max(1, sum(len(cluster.get(kind) or ())
                      for kind in ("chief", "worker")))
  except (ValueError, AttributeError, TypeError):
    return 1


def choose(strategy: str, tpu: Optional[str], num_gpus: Optional[int],
           hardware: Hardware) -> Choice:
  """The strategy a run takes: what the user gave, else the hardware's.

  A strategy left unset (`FROM_HARDWARE`) is `tpu` when a TPU is configured
  (`tpu`: `--tpu` or `runtime.tpu`) or found (then `tpu="local"`),
  `multi_worker_mirrored` when `TF_CONFIG` names several tasks, `mirrored`
  over several GPUs, and `one_device` otherwise. `num_gpus` left unset
  (None) is the GPUs found (at most one for `one_device`); Model Garden
  reads 0 as the CPU.

  Examples:
    >>> choose("", None, None, Hardware(gpus=4)).line()
    'Strategy: mirrored over 4 GPUs (4 GPUs found); --strategy chooses another.'
    >>> choose("", None, None, Hardware()).strategy
    'one_device'
    >>> choose("mirrored", None, 2, Hardware(gpus=4)).num_gpus
    2
  """
  gpus = hardware.gpus if num_gpus is None else num_gpus
  found = "found" if num_gpus is None else "given by runtime.num_gpus"
  if strategy != FROM_HARDWARE:
    if strategy == "one_device":
      gpus = min(gpus, 1) if num_gpus is None else gpus
    return Choice(strategy, gpus, tpu, "given")
  if tpu is not None:
    return Choice("tpu", 0, tpu, f"--tpu / runtime.tpu is {tpu!r}")
  if hardware.tpus:
    return Choice("tpu", 0, "local", f"{hardware.tpus} TPU cores found")
  if hardware.workers > 1:
    return Choice("multi_worker_mirrored", gpus, tpu,
                  f"TF_CONFIG names {hardware.workers} tasks")
  if gpus > 1:
    return Choice("mirrored", gpus, tpu, f"{gpus} GPUs {found}")
  if gpus == 1:
    return Choice("one_device", 1, tpu, f"1 GPU {found}")
  return Choice("one_device", 0, tpu,
                "no TPU configured, no GPU found" if num_gpus is None
                else "runtime.num_gpus is 0")


def choose_for_runtime(runtime, find_hardware: Callable[[], Hardware]
                       ) -> Choice:
  """`choose` for a config's `runtime`: its `distribution_strategy`, `tpu`
  and `num_gpus` (unset: None or negative). `find_hardware` is called only
  when the strategy or the GPU count is left to the hardware.

  Examples:
    >>> from types import SimpleNamespace
    >>> runtime = SimpleNamespace(distribution_strategy="mirrored", tpu=None,
    ...                           num_gpus=-1)
    >>> choose_for_runtime(runtime, lambda: Hardware(gpus=2)).line()
    'Strategy: mirrored over 2 GPUs (given).'
  """
  num_gpus = runtime.num_gpus
  unset_gpus = num_gpus is None or num_gpus < 0
  from_hardware = runtime.distribution_strategy == FROM_HARDWARE or unset_gpus
  return choose(runtime.distribution_strategy, runtime.tpu,
                None if unset_gpus else num_gpus,
                find_hardware() if from_hardware else Hardware())
