"""Progress on long work, on stderr: a tqdm bar on a terminal, plain periodic lines elsewhere, nothing when disabled.

When stderr is not a terminal (a log file, a CI job, ``2> log``) a bar's ``\\r`` frames and cursor escapes fill the
log; there each bar writes one plain line when it starts, at most one every :data:`INTERVAL_S` seconds while it
runs (``MODELSEEK_PROGRESS_INTERVAL`` overrides it), and one when it ends: ``fine-tuning: 12/192 (6%) 0:01:40
elapsed, 0:25:00 left``. Given an up-front estimate of the whole, the time left is steadied by it
(:func:`time_left`). tqdm has no such mode (it redraws the same line whatever the stream), hence the small
writer below.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator, Sized
from typing import IO, Protocol, TypeVar

T = TypeVar("T")

#: seconds between two plain progress lines (when stderr is not a terminal)
INTERVAL_S = 30.0

#: what a plain progress line looks like (``DESC: N[/TOTAL (P%)] H:MM:SS elapsed[, H:MM:SS left]``)
PROGRESS_LINE = re.compile(r"^(?:.*: )?\d+(?:/\d+ \(\d+%\))? \d+:\d\d:\d\d elapsed(?:, \d+:\d\d:\d\d left)?$")


def is_progress_line(line: str) -> bool:
    """Whether ``line`` of stderr is a plain progress line (so a log reader, or a test, can tell it from a
    message)."""
    return not line.startswith("error: ") and PROGRESS_LINE.match(line) is not None


def _interactive(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def _interval() -> float:
    raw = os.environ.get("MODELSEEK_PROGRESS_INTERVAL", "")
    try:
        value = float(raw)
    except ValueError:
        return INTERVAL_S
    return value if value >= 0 else INTERVAL_S


def progress_bar(items: Iterable[T], desc: str = "", total: int | None = None, disable: bool = False) -> Iterable[T]:
    if disable:
        return items
    if not _interactive(sys.stderr):
        if total is None:
            total = len(items) if isinstance(items, Sized) else None
        return _LineCounter(total, desc).wrap(items)
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, total=total, leave=False, dynamic_ncols=True)


class Counter(Protocol):
    """A progress bar counted by hand (``update``), as :func:`progress_counter` returns it."""

    n: int

    def update(self, n: int = 1) -> object: ...

    def refresh(self) -> object: ...

    def close(self) -> None: ...


class _Silent:
    """The counter of a disabled bar: counts, shows nothing."""

    def __init__(self) -> None:
        self.n = 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


def _clock(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class _LineCounter:
    """A bar for a stream that is not a terminal: plain lines, at most one per interval (see the module doc)."""

    def __init__(self, total: int | None, desc: str, stream: IO[str] | None = None,
                 interval: float | None = None, expected_s: float | None = None) -> None:
        self.n = 0
        self.total, self.desc = total, desc
        self.expected_s = expected_s
        self.stream = sys.stderr if stream is None else stream
        self.interval = _interval() if interval is None else interval
        self.start = self.last = time.monotonic()
        self.closed = False
        self._line(self.start)

    def _line(self, now: float) -> None:
        elapsed = now - self.start
        text = f"{self.desc}: {self.n}" if self.desc else f"{self.n}"
        if self.total:
            text += f"/{self.total} ({100 * self.n / self.total:.0f}%)"
        text += f" {_clock(elapsed)} elapsed"
        if self.total and self.n < self.total and (self.n or self.expected_s):
            text += f", {_clock(time_left(elapsed, self.n, self.total, self.expected_s))} left"
        with contextlib.suppress(OSError, ValueError):  # progress never stops the work (a full log disk)
            print(text, file=self.stream, flush=True)
        self.last = now

    def update(self, n: int = 1) -> None:
        self.n += n
        self.refresh()

    def refresh(self) -> None:
        now = time.monotonic()
        if now - self.last >= self.interval:
            self._line(now)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._line(time.monotonic())

    def wrap(self, items: Iterable[T]) -> Iterator[T]:
        try:
            for item in items:
                yield item
                self.update(1)
        finally:
            self.close()


_EXPECTED: contextvars.ContextVar[float | None] = contextvars.ContextVar("modelseek_expected_s", default=None)


@contextlib.contextmanager
def expected_duration(seconds: float | None) -> Iterator[None]:
    """Within the block, a :func:`progress_counter` made without ``expected_s`` takes ``seconds`` as its up-front
    estimate (a caller that estimated a step, such as ``submission``, steadies the bars the step's code makes)."""
    token = _EXPECTED.set(seconds)
    try:
        yield
    finally:
        _EXPECTED.reset(token)


#: how many items' worth of weight an up-front estimate has in :func:`time_left`
PRIOR_ITEMS = 4


def time_left(elapsed: float, done: int, total: int, expected_s: float | None = None) -> float:
    """Seconds left after ``done`` of ``total`` items in ``elapsed`` seconds. Without an estimate: the mean rate so
    far. With ``expected_s`` (an up-front estimate of the whole): the rate is the measured one pooled with
    :data:`PRIOR_ITEMS` items at the estimate's rate, so the first items (a model's first load, imports) do not
    swing the figure; the measurement takes over as items finish."""
    if done >= total:
        return 0.0
    if not expected_s or expected_s <= 0:
        return elapsed * (total - done) / done if done else 0.0
    prior_rate = expected_s / total
    rate = (elapsed + PRIOR_ITEMS * prior_rate) / (done + PRIOR_ITEMS)
    return rate * (total - done)


def progress_counter(total: int, desc: str = "", disable: bool = False,
                     expected_s: float | None = None) -> Counter:
    """A bar advanced by ``update`` (work that finishes out of order, or elsewhere); silent when disabled, plain
    periodic lines when stderr is not a terminal. ``expected_s``: an up-front estimate of the whole, which steadies
    the time left (:func:`time_left`) of the plain lines."""
    if disable:
        return _Silent()
    if expected_s is None:
        expected_s = _EXPECTED.get()
    if not _interactive(sys.stderr):
        return _LineCounter(total, desc, expected_s=expected_s)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False, dynamic_ncols=True)
