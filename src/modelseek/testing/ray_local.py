"""A local Ray instance for tests and examples (the executors' tests start one per module)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def local_ray(num_cpus: int = 2, src: str | Path | None = None) -> Iterator[None]:
    """A local Ray instance with ``num_cpus`` CPUs, shut down on exit. Its workers inherit ``PYTHONPATH`` with
    ``src`` in front (a checkout's sources: the executors' probe finds modelseek there and ships nothing), and
    idle workers are kept for 10 minutes (each worker start imports torch)."""
    import ray  # lazy: ray

    old = os.environ.get("PYTHONPATH")
    if src is not None:
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), old) if p)
    try:
        ray.init(num_cpus=num_cpus, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False,
                 _system_config={"idle_worker_killing_time_threshold_ms": 600_000})
    finally:
        if src is not None:
            if old is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = old
    try:
        yield
    finally:
        ray.shutdown()
