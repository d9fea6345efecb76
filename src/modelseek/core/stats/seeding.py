"""Named random streams: ``derive_rng(seed, "task", "model")`` is the same Generator on every machine.

Streams are keyed by names rather than by call order so that a model's draws do not depend on which other
models take part (an incremental pre-submission then reproduces the full tournament's p-values exactly).
"""

from __future__ import annotations

import hashlib

import numpy as np


def _key(part) -> int:
    if isinstance(part, (int, np.integer)) and part >= 0:
        return int(part)
    return int.from_bytes(hashlib.sha256(str(part).encode("utf-8")).digest()[:8], "little")


def derive_rng(seed: int, *keys) -> np.random.Generator:
    """A Generator seeded by ``seed`` and any number of names (strings or non-negative ints)."""
    return np.random.default_rng([_key(seed), *(_key(k) for k in keys)])
