"""Progress bars on long work (tqdm on stderr; silent when disabled)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


def progress_bar(items: Iterable[T], desc: str = "", total: int | None = None, disable: bool = False) -> Iterable[T]:
    if disable:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, total=total, leave=False, dynamic_ncols=True)
