"""Per-task weights: a :class:`Gate` scales a fusion's weights per topic from one feature.

With base weights ``w_r``, a gated fusion uses at topic ``t``

    ``w_r(t) = w_r * g_r(t)``,   ``g_r(t) = clip(x_r(t) / m_r, 1/8, 8) ** gamma``  for each gated run ``r``,

and ``g_r(t) = 1`` for the other runs. ``x_r(t)`` is the feature at topic ``t``: run ``r``'s own spread
(feature ``spread``, every run with a defined reference gated by its own spread; see
:mod:`modelseek.retrieval.fusion.features`) or a task feature such as ``size`` (the same number for every run; one run
gated, so that the balance between the runs moves with the task). ``m_r`` is the reference the gate stores:
the median of the feature over the topics the fusion was learned on (computed from the runs and the task
features only, never from the ground truth). The clip keeps every factor within [1/8, 8] ** |gamma|.

Topics without the feature (a task without a value, a run holding fewer than 2 candidates) get ``g = 1``:
they are fused with the base weights, as a topic at the reference would be. ``gamma`` is searched over a small
grid (:data:`GAMMAS`); ``gamma > 0`` trusts the gated run more where the feature is large (a big task),
``gamma < 0`` less (a run whose scores scatter more than usual).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...core.errors import InputError
from .features import SPREAD

if TYPE_CHECKING:
    from .core import Block

GAMMAS = (-1.0, -0.5, 0.5, 1.0)
CLIP = 8.0


@dataclass(frozen=True)
class Gate:
    """``feature``, exponent ``gamma`` and ``refs``: (run id, reference ``m_r``) of each gated run, by run id."""

    feature: str
    gamma: float
    refs: tuple[tuple[str, float], ...]

    @classmethod
    def build(cls, feature: str, gamma: float, refs: Mapping[str, float]) -> Gate:
        name = str(feature).strip()
        if not name:
            raise InputError("a gate needs a feature", field="gate.feature")
        try:
            g = float(gamma)
        except (TypeError, ValueError):
            raise InputError(f"not a number: {gamma!r}", field="gate.gamma") from None
        if not math.isfinite(g):
            raise InputError(f"must be finite, got {gamma!r}", field="gate.gamma")
        if not isinstance(refs, Mapping) or not refs:
            raise InputError("must be a non-empty object {run_id: reference}", field="gate.refs")
        out = []
        for r, m in refs.items():
            try:
                x = float(m)
            except (TypeError, ValueError):
                raise InputError(f"not a number: {m!r}", field="gate.refs") from None
            if not math.isfinite(x) or x <= 0:
                raise InputError(f"run {r}: the reference must be finite and > 0, got {m!r}", field="gate.refs")
            out.append((str(r), x))
        return cls(name, g, tuple(sorted(out)))

    @property
    def task_feature(self) -> str | None:
        """The task feature this gate needs (None for the runs' own spread)."""
        return None if self.feature == SPREAD else self.feature

    def factors(self, block: Block) -> np.ndarray:
        """``g_r(t)``, ``runs x topics`` in the block's orders (1 for ungated runs and topics without the feature)."""
        R, T = len(block.run_ids), len(block.topics)
        x = block.spread() if self.feature == SPREAD else np.broadcast_to(block.feature(self.feature), (R, T))
        out = np.ones((R, T))
        refs = dict(self.refs)
        for ri, r in enumerate(block.run_ids):
            if r in refs:
                with np.errstate(invalid="ignore"):
                    rel = np.clip(x[ri] / refs[r], 1.0 / CLIP, CLIP)
                out[ri] = np.where(np.isfinite(rel), rel ** self.gamma, 1.0)
        return out

    def describe(self) -> str:
        if self.feature == SPREAD:
            return f"x (spread/median)^{self.gamma:g} per run"
        return " ".join(f"x ({self.feature}/{m:g})^{self.gamma:g} on {r}" for r, m in self.refs)

    def to_dict(self) -> dict:
        return {"feature": self.feature, "gamma": self.gamma, "refs": dict(self.refs)}

    @classmethod
    def from_dict(cls, d: object, run_ids: Sequence[str]) -> Gate:
        if not isinstance(d, Mapping):
            raise InputError("must be an object", field="gate")
        unknown = set(d) - {"feature", "gamma", "refs"}
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(sorted(unknown))}", field="gate")
        gate = cls.build(d.get("feature", ""), d.get("gamma"), d.get("refs"))  # type: ignore[arg-type]
        gate.check(run_ids)
        return gate

    def check(self, run_ids: Sequence[str]) -> None:
        extra = [r for r, _ in self.refs if r not in run_ids]
        if extra:
            raise InputError(f"gates run(s) {', '.join(extra)} not among the fusion's ({', '.join(run_ids)})",
                             field="gate.refs")


def reference(values: np.ndarray) -> float | None:
    """The median of the finite, positive ``values`` (None when there are none)."""
    v = values[np.isfinite(values) & (values > 0)]
    return float(np.median(v)) if v.size else None


def candidate_gates(block: Block, task_features: Sequence[str] = (), gammas: Sequence[float] = GAMMAS) -> list[Gate]:
    """The gates the optimiser tries on ``block`` (the topics it learns on): each run's spread, then each task
    feature on each run, each with every ``gamma``; references are medians over the block's topics."""
    gates = []
    spread_refs = {r: m for r, m in zip(block.run_ids, (reference(s) for s in block.spread())) if m is not None}
    if spread_refs:
        gates += [Gate.build(SPREAD, g, spread_refs) for g in gammas]
    for name in task_features:
        m = reference(block.feature(name))
        if m is None:
            continue
        gates += [Gate.build(name, g, {r: m}) for r in sorted(block.run_ids) for g in gammas]
    return gates


__all__ = ["CLIP", "GAMMAS", "Gate", "candidate_gates", "reference"]
