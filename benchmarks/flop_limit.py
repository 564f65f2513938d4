"""What share of the CPU's float32 limit an encoder's sentences/s use.

    limit = fp32_limit(threads)            # the assumptions, said
    flops = transformer_flops(lengths, num_layers, hidden_size,
                              intermediate_size)  # per sentence, mean
    share = sent_per_s * flops / (limit["gflop_per_s"] * 1e9)

The work of a BERT-shaped encoder on a sentence of L real tokens (no
padding counted: what any path must compute), per layer, in
multiply-accumulates: the Q, K, V and output projections 4 L H^2, the
feed-forward block 2 L H I, and attention's scores and weighted sum
2 L^2 H; a FLOP is half a MAC. Embedding look-ups, layer norms, softmax and
pooling are left out (a few percent).

The limit is cores x fp32 lanes x FMA units x 2 FLOPs x clock: lanes 16
with avx512f, 8 with avx2 (/proc/cpuinfo's flags), 4 otherwise; two FMA
units a core, which /proc/cpuinfo does not say (Xeon Scalable Gold and
Platinum and later have two 512-bit units; some parts one, then the share
reads twice too low); the clock of cpufreq's cpuinfo_max_freq, else
/proc/cpuinfo's "cpu MHz" (AVX-512 code often runs below either, so the
share is a lower bound); cores: the threads the paths get, at most
os.cpu_count() (hyper-threads share one core's units: counted as cores,
the limit is too high and the share reads low). Every assumption is written beside the figure.
"""
import os
from typing import Dict, Sequence

import numpy as np

FMA_UNITS_ASSUMED = 2
_MAX_FREQ = "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"


def _cpuinfo_field(name: str) -> str:
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        if line.split(":")[0].strip() == name:
          return line.split(":", 1)[1].strip()
  except OSError:
    pass
  return ""


def clock_ghz():
  """(GHz, where it was read), or (None, "unknown")."""
  try:
    with open(_MAX_FREQ, encoding="utf-8") as f:
      return int(f.read().strip()) / 1e6, "cpufreq cpuinfo_max_freq"
  except (OSError, ValueError):
    pass
  mhz = _cpuinfo_field("cpu MHz")
  if mhz:
    return float(mhz) / 1e3, "/proc/cpuinfo cpu MHz"
  return None, "unknown"


def fp32_limit(threads: int) -> Dict:
  """The float32 FLOP limit of `threads` cores, with its assumptions."""
  flags = set(_cpuinfo_field("flags").split())
  lanes, isa = ((16, "avx512f") if "avx512f" in flags else
                (8, "avx2") if "avx2" in flags else (4, "sse"))
  cores = min(threads, os.cpu_count() or threads)
  ghz, source = clock_ghz()
  gflops = (cores * lanes * FMA_UNITS_ASSUMED * 2 * ghz) if ghz else None
  return {"cores": cores, "isa": isa, "fp32_lanes": lanes,
          "fma_units_assumed": FMA_UNITS_ASSUMED, "clock_ghz": ghz,
          "clock_source": source,
          "gflop_per_s": round(gflops, 1) if gflops else None,
          "assumption": f"{cores} cores x {lanes} fp32 lanes ({isa}) x "
                        f"{FMA_UNITS_ASSUMED} FMA units (assumed) x 2 x "
                        f"{ghz} GHz ({source})"}


def transformer_flops(lengths: Sequence[int], num_layers: int,
                      hidden_size: int, intermediate_size: int) -> float:
  """Mean FLOPs per sentence of sentences of `lengths` real tokens."""
  lengths = np.asarray(lengths, np.float64)
  macs = num_layers * (lengths * (4 * hidden_size ** 2 +
                                  2 * hidden_size * intermediate_size) +
                       2 * lengths ** 2 * hidden_size)
  return float(2 * macs.mean())


def share(sent_per_s: float, flops_per_sentence: float, limit: Dict):
  """The share of `limit` that `sent_per_s` sentences use (None without a
  clock)."""
  if not limit.get("gflop_per_s"):
    return None
  return round(sent_per_s * flops_per_sentence / (limit["gflop_per_s"] * 1e9),
               4)
