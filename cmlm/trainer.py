"""Model Garden's trainer, with the throughput the issue asks to see.

Adds `examples_per_second` (global batch x steps / wall time of the loop) to
the train logs that orbit writes to TensorBoard next to the loss, the MLM
accuracy and the learning rate.
"""
import time

from official.core import base_trainer


class CmlmTrainer(base_trainer.Trainer):
  """`base_trainer.Trainer` + examples/s in each train loop's logs."""

  first_step_of_run = None  # the step this process started (or resumed) at

  def train_loop_begin(self):
    super().train_loop_begin()
    self._loop_start = (time.perf_counter(), int(self.global_step.numpy()))
    if self.first_step_of_run is None:
      self.first_step_of_run = self._loop_start[1]

  def train_loop_end(self):
    logs = super().train_loop_end()
    start_time, start_step = self._loop_start
    elapsed = time.perf_counter() - start_time
    steps = int(self.global_step.numpy()) - start_step
    batch = self.config.task.train_data.global_batch_size
    if elapsed > 0:
      logs["examples_per_second"] = steps * batch / elapsed
    return logs
