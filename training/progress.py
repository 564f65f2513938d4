"""The progress line a training run prints after each loop."""
import time

import orbit
import tensorflow as tf


class ProgressReporter:
  """An orbit train action printing step, losses, metrics, speed and ETA.

  Prints `loss`, then every objective's `<name>/<metric>` (its loss and
  whatever metrics it declares), examples/s and the learning rate.
  """

  def __init__(self, total_steps: int, global_step: tf.Variable):
    self._total = total_steps
    self._global_step = global_step
    self._last = None  # (time, step) of the previous report
    self.first_loss = None  # mean training loss of the first loop
    self.last_loss = None   # ... and of the latest one

  def __call__(self, output):
    now, step = time.perf_counter(), int(self._global_step.numpy())
    fields = [f"step {step}/{self._total} ({100 * step / self._total:.0f}%)"]
    output = tf.nest.map_structure(orbit.utils.get_value, output)
    if "training_loss" in output:
      self.last_loss = float(output["training_loss"])
      if self.first_loss is None:
        self.first_loss = self.last_loss
      fields.append(f"loss {self.last_loss:.4g}")
    for key in sorted(k for k in output if "/" in k):
      fields.append(f"{key} {float(output[key]):.4g}")
    for key, label in (("examples_per_second", "ex/s"),
                       ("learning_rate", "lr")):
      if key in output:
        fields.append(f"{label} {float(output[key]):.4g}")
    if output.get("skipped_batches"):
      fields.append(f"skipped {int(output['skipped_batches'])} non-finite")
    if self._last is not None and step > self._last[1]:
      seconds_per_step = (now - self._last[0]) / (step - self._last[1])
      eta = seconds_per_step * max(self._total - step, 0)
      fields.append(f"ETA {eta // 60:.0f}m{eta % 60:02.0f}s")
    self._last = (now, step)
    print(" | ".join(fields), flush=True)
