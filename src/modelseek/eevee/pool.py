"""Worker processes for the batched evaluator, and the torch thread setting of the meta-model work.

Each worker builds its own :class:`~modelseek.eevee.data.SplitData` once (spawned processes, one torch thread
each) and then fits the parts of a batch it is sent, given by input columns; the results are exactly those
of the same part fitted in the parent process.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np

from .config import MetaConfig
from .data import SplitData
from .models import fit_columns
from .table import Table


def usable_cpus(cap: int | None = None) -> int:
    """CPUs this process may run on (its affinity mask where the OS has one), at most ``cap``."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(n, cap) if cap else n)


@contextmanager
def torch_threads(n: int | None):
    """Run with ``n`` intra-op torch threads, restoring the setting after. The meta-models are tiny: with
    OpenMP threads spinning on a loaded 2-core machine we measured a 9x slowdown against one thread."""
    if n is None:
        yield
        return
    import torch  # lazy: torch

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


class WorkerPool:
    """``workers`` spawned processes that fit parts of a batch for one (table, config)."""

    def __init__(self, table: Table, config: MetaConfig, workers: int, splits=None) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        self._ex = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_worker_init,
                                       initargs=(table, config, splits))

    def fit(self, parts: list[list[list[int]]], width: int) -> np.ndarray:
        """Losses of every part's subsets (given by input columns), concatenated in order."""
        futures = [self._ex.submit(_worker_fit, cols, width) for cols in parts]
        return np.concatenate([f.result() for f in futures])

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self._ex.shutdown(wait=wait, cancel_futures=cancel_futures)


_WORKER: dict = {}


def _worker_init(table: Table, config: MetaConfig, splits=None) -> None:
    import torch  # lazy: torch

    torch.set_num_threads(1)  # a worker process of our own: its thread setting is ours to choose
    _WORKER["data"] = SplitData(table, config, splits)


def _worker_fit(cols: list[list[int]], width: int) -> np.ndarray:
    return fit_columns(_WORKER["data"], cols, width)
