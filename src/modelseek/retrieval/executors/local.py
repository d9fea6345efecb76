"""``local``: the units one after another in this process (the default executor)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from . import OnDone, OnStart, Unit
from ...core.kinds import register


@register("executor")
class LocalExecutor:
    """Runs each unit in this process, in order, as soon as its claim is granted."""

    name: ClassVar[str] = "local"
    in_process: ClassVar[bool] = True
    concurrency: ClassVar[str] = "serial"

    def run(self, units: Sequence[Unit], on_start: OnStart, on_done: OnDone) -> None:
        for unit in units:
            attempt = on_start(unit)
            if attempt is not None:
                on_done(unit, unit.call(), attempt)
