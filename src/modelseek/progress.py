"""Progress bars on long work (tqdm on stderr; silent when disabled)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

T = TypeVar("T")


def progress_bar(items: Iterable[T], desc: str = "", total: int | None = None, disable: bool = False) -> Iterable[T]:
    if disable:
        return items
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


def progress_counter(total: int, desc: str = "", disable: bool = False) -> Counter:
    """A bar advanced by ``update`` (work that finishes out of order, or elsewhere); silent when disabled."""
    if disable:
        return _Silent()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False, dynamic_ncols=True)
