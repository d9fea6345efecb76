"""Small torch helpers shared by the neural rankers (imported lazily: torch is an optional dependency)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np


@contextlib.contextmanager
def seeded(seed: int):
    """Run a block with torch's global RNG seeded, restoring the caller's RNG state afterwards (so that
    module initialisation is reproducible without changing global state)."""
    import torch  # lazy: torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        yield


def state_to_arrays(module, prefix: str = "") -> dict[str, np.ndarray]:
    return {prefix + k: v.detach().cpu().numpy().astype(np.float32) for k, v in module.state_dict().items()}


def arrays_to_state(module, arrays: dict[str, np.ndarray], prefix: str = "") -> None:
    import torch  # lazy: torch

    state = {k[len(prefix):]: torch.from_numpy(np.asarray(v, np.float32)) for k, v in arrays.items()
             if k.startswith(prefix)}
    module.load_state_dict(state)


def listnet_loss(scores, targets, temperature: float):
    """ListNet (Cao et al., ICML 2007) top-one cross-entropy between softmax(targets / temperature) and
    softmax(scores): graded, tie-aware (tied targets get equal target probability)."""
    import torch  # lazy: torch

    p = torch.softmax(targets / temperature, dim=-1)
    return -(p * torch.log_softmax(scores, dim=-1)).sum(-1).mean()


class NetState:
    """Artifact state of a ranker whose fitted part is a torch module ``net_`` built by ``_net(in_dim_)``."""

    net_: Any
    in_dim_: int
    _net: Callable[[int], Any]

    def _state(self):
        return state_to_arrays(self.net_), {"in_dim": self.in_dim_}

    def _set_state(self, arrays, extra) -> None:
        self.in_dim_ = int(extra["in_dim"])
        self.net_ = self._net(self.in_dim_)
        arrays_to_state(self.net_, arrays)
        self.net_.eval()
