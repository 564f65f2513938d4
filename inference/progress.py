"""A one-line progress bar on stderr for `python -m cmlm encode`."""
import sys
import time


class Progress:
  """Counts sentences done; redraws `[####....] 40% 1200/3000 | 850 sent/s`.

  On a terminal the line is redrawn in place; otherwise (a log file) a line is
  printed at each tenth of the work, so logs stay short.
  """

  def __init__(self, total: int, enabled: bool = True, stream=None,
               width: int = 30):
    self._total = max(total, 1)
    self._done = 0
    self._enabled = enabled
    self._stream = stream or sys.stderr
    self._width = width
    self._start = time.perf_counter()
    self._last_tenth = -1
    self._interactive = getattr(self._stream, "isatty", lambda: False)()

  def update(self, count: int) -> None:
    self._done += count
    if not self._enabled:
      return
    tenth = 10 * self._done // self._total
    if self._interactive:
      self._stream.write("\r" + self._line())
      self._stream.flush()
    elif tenth != self._last_tenth:
      self._stream.write(self._line() + "\n")
    self._last_tenth = tenth

  def close(self) -> None:
    if self._enabled and self._interactive:
      self._stream.write("\n")
      self._stream.flush()

  def _line(self) -> str:
    fraction = min(self._done / self._total, 1.0)
    filled = int(round(self._width * fraction))
    elapsed = time.perf_counter() - self._start
    rate = self._done / elapsed if elapsed > 0 else 0.0
    eta = (self._total - self._done) / rate if rate > 0 else 0.0
    return (f"[{'#' * filled}{'.' * (self._width - filled)}] "
            f"{fraction:4.0%} {self._done}/{self._total} | {rate:.0f} sent/s | "
            f"ETA {eta // 60:.0f}m{eta % 60:02.0f}s")
