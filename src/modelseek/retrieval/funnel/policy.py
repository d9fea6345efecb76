"""The funnel's policy: one object, chosen by ``replay`` on a history, that ``select`` loads and walks.

A :class:`Policy` holds everything that decides which candidates ``select`` fine-tunes and how it ranks them:

* the **prior** — its form (:class:`~modelseek.retrieval.funnel.replay.PriorForm`) and its scores per model, fitted on
the
  history (the average rank of the 20 NTCIR-19 candidates over the 70 training tasks for the shipped one);
* the **order** fine-tuning walks (``prior``: the prior's top-k);
* the **final ranking** per budget: the expected-gain merge (:mod:`.merge`) at the budgets where its held-out
  nDCG@5 gain over fine-tuned first is positive with its paired 95 % interval on the history (inner cross-fitting,
  :func:`~modelseek.retrieval.funnel.replay.choose_on_history`), fine-tuned first elsewhere; and the merge's gain
  tables;
* the **noise assumption** (sd of a fine-tuned score's seed noise) it was chosen and learned with — the same as
  ``replay``'s default (0) unless the maker said otherwise;
* where it was **measured**: the history, how many tasks, and its figures, labelled with what they are (nested
  cross-fitting within the history's tasks, or withheld tasks).

:func:`choose_policy` makes one (``modelseek replay TRUTH --policy-out FILE``); :func:`shipped_policy` is the one
chosen on the 70 NTCIR-19 training tasks, shipped with the package
(``modelseek/resources/funnel/policy-ntcir19.json``, made by ``benchmarks/select_policy.py --write``), which
``select`` walks by default.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.truth import GradingScheme, GroundTruth
from ...core.errors import InputError
from ...core.io import atomic_write_text
from .curve import summarize
from .merge import GainTables
from .replay import PRIOR, PriorForm, choose_on_history, history_gains, prior_scores, replay

#: the budgets (fine-tunes) at which a policy chooses the final ranking (a larger k takes the last one's choice)
POLICY_FINETUNES = tuple(range(1, 11))
#: the budgets whose nested figures a policy records
FIGURE_FINETUNES = (0, 1, 3, 5, 10)
POLICY_VERSION = 1
SHIPPED_POLICY = "policy-ntcir19.json"
#: what the nested figures are, in the words the docs and ``--json`` use
NESTED = ("nested: 5-fold cross-fitting by task within the {n} fitting tasks, every choice (prior form, merge) "
          "made on the other folds alone by inner cross-fitting; not withheld tasks")


@dataclass(frozen=True)
class Policy:
    """What ``select`` walks (see the module docstring)."""

    prior_form: PriorForm
    prior: dict[str, float]                 # model id -> the prior's score (higher first)
    order: str = PRIOR
    merge: dict[int, bool] = field(default_factory=dict)
    merge_gain: dict[int, tuple[float, float, float]] = field(default_factory=dict)  # held-out (mean, low, high)
    gains: dict[int, GainTables] = field(default_factory=dict)   # the merge's tables, where it is chosen
    noise: float = 0.0
    reliability: float = 0.0                # the prior's within-task rank correlation with fine-tuned F1 (nested)
    measured_on: str = ""
    tasks: int = 0
    figures: dict[str, Any] = field(default_factory=dict)        # {"kind": ..., "budgets": [{k, ...}]}
    sources: dict[str, str] = field(default_factory=dict)        # model id -> its Hugging Face id, where known

    def merge_at(self, k: int) -> bool:
        """Whether the final ranking after ``k`` fine-tunes is the merge (a ``k`` above the largest chosen takes
        that one's choice)."""
        if k <= 0 or not self.merge:
            return False
        return bool(self.merge.get(k, self.merge[max(self.merge)] if k > max(self.merge) else False))

    def gain_tables(self, k: int) -> GainTables:
        """The merge's tables for ``k`` fine-tunes (the largest chosen budget's above it)."""
        key = k if k in self.gains else max(self.gains)
        return self.gains[key]

    def prior_for(self, ids: list[str], sources: list[str | None] | None = None) -> dict[str, float] | None:
        """The prior's scores for the candidates ``ids`` (matched by id, or by Hugging Face id ``sources``);
        ``None`` where it does not cover them all."""
        by_source = {s: self.prior[i] for i, s in self.sources.items() if i in self.prior}
        out = {}
        for j, cid in enumerate(ids):
            src = sources[j] if sources else None
            if cid in self.prior:
                out[cid] = self.prior[cid]
            elif src is not None and src in by_source:
                out[cid] = by_source[src]
            else:
                return None
        return out

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {"version": POLICY_VERSION, "measured_on": self.measured_on, "tasks": self.tasks,
                "noise": self.noise, "order": self.order, "prior_form": self.prior_form.value,
                "prior": self.prior, "sources": self.sources, "reliability": self.reliability,
                "merge": {str(k): v for k, v in self.merge.items()},
                "merge_gain": {str(k): list(v) for k, v in self.merge_gain.items()},
                "gains": {str(k): t.to_dict(exact=True) for k, t in self.gains.items()}, "figures": self.figures}

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: str | Path | None = None) -> Policy:
        try:
            if int(d.get("version", 0)) != POLICY_VERSION:
                raise InputError(f"policy version {d.get('version')!r}, expected {POLICY_VERSION}", path=path,
                                 field="version")
            return cls(prior_form=PriorForm.parse(d["prior_form"], field="prior_form"),
                       prior={str(k): float(v) for k, v in d["prior"].items()}, order=str(d["order"]),
                       merge={int(k): bool(v) for k, v in d["merge"].items()},
                       merge_gain={int(k): (float(v[0]), float(v[1]), float(v[2]))
                                   for k, v in d.get("merge_gain", {}).items()},
                       gains={int(k): GainTables.from_dict(t) for k, t in d.get("gains", {}).items()},
                       noise=float(d["noise"]), reliability=float(d.get("reliability", 0.0)),
                       measured_on=str(d.get("measured_on", "")), tasks=int(d.get("tasks", 0)),
                       figures=dict(d.get("figures", {})), sources={str(k): str(v)
                                                                  for k, v in d.get("sources", {}).items()})
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise InputError(f"not a funnel policy ({type(exc).__name__}: {exc})", path=path) from None

    def save(self, path: str | Path) -> Path:
        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=1) + "\n")
        return Path(path)

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        p = Path(path)
        if not p.is_file():
            raise InputError("no such policy file", path=p)
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"not a JSON policy ({exc})", path=p) from None
        if not isinstance(doc, dict):
            raise InputError("not a funnel policy (a JSON object expected)", path=p)
        return cls.from_dict(doc, p)

    def describe(self) -> list[str]:
        merged = [k for k, v in sorted(self.merge.items()) if v]
        gain = "; ".join(f"k={k} {m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for k, (m, lo, hi) in sorted(self.merge_gain.items())
                         if k in (1, 3, 5, 10))
        out = [f"policy: {self.measured_on} ({self.tasks} tasks; seed noise sd {self.noise:g} assumed): prior "
               f"{self.prior_form.value} fitted there"
               + (f" (within-task rank correlation {self.reliability:.2f})" if self.figures else "") + ", "
               f"fine-tuning down {'the prior' if self.order == PRIOR else self.order}'s top-k, final ranking "
               + (f"by expected official gain (the merge) after k = {', '.join(map(str, merged))} fine-tunes, "
                  f"fine-tuned first otherwise" if merged else "fine-tuned first at every k"),
               f"  the merge where its held-out nDCG@5 gain is positive with its 95 % interval: {gain}"]
        fig = self.figures.get("budgets") or []
        if fig:
            out.append(f"  expected nDCG@5 ({self.figures.get('kind', 'nested')}): " + ", ".join(
                f"k={b['k']} {b['ndcg@5']:.3f} [{b['low']:.3f}, {b['high']:.3f}]" for b in fig))
        return out


def choose_policy(history: GroundTruth, noise: float = 0.0, seed: int = 0, source: str | None = None,
                  sources: dict[str, str] | None = None, figures: bool = True) -> Policy:
    """The policy replay chooses on ``history`` (every choice by cross-fitting on it alone, see
    :func:`~modelseek.retrieval.funnel.replay.choose_on_history`) at :data:`POLICY_FINETUNES`, with the seed noise
    ``noise``
    assumed; with ``figures``, its nested figures (replay's 5-fold cross-fitting within the history at
    :data:`FIGURE_FINETUNES`, each fold choosing on its other folds alone)."""
    models = [str(c) for c in history.matrix("f1").columns]
    n = len(history.task_ids)
    folds = min(5, n)
    ch = choose_on_history(history, models, (), POLICY_FINETUNES, noise=noise, repeats=1 if noise == 0 else 20,
                           folds=folds, seed=seed)
    prior = prior_scores(history, models, ch.form)
    merged = [k for k, v in ch.merge.items() if v]
    gains = history_gains(history, models, merged, ch.form, GradingScheme.NTCIR, noise, seed) if merged else {}
    figs: dict[str, Any] = {}
    rel = 0.0
    if figures:
        d = replay(history, finetunes=FIGURE_FINETUNES, noise=noise, repeats=1 if noise == 0 else 20, folds=folds,
                   seed=seed, sequential=False)
        s = summarize(d, n_boot=1000)
        rel = float(d.reliability.get(PRIOR, 0.0))
        figs = {"kind": NESTED.format(n=n), "budgets": [
            {"k": b["k"], "policy": b["funnel"], "ndcg@5": b["policies"][b["funnel"]]["ndcg@5"],
             "low": b["policies"][b["funnel"]]["intervals"]["ndcg@5"][0],
             "high": b["policies"][b["funnel"]]["intervals"]["ndcg@5"][1],
             "finetuned_first": b["policies"][d.base]["ndcg@5"]} for b in s["budgets"]]}
    return Policy(prior_form=ch.form, prior=dict(zip(models, map(float, prior))), order=ch.order, merge=ch.merge,
                  merge_gain=ch.merge_gain, gains=gains, noise=float(noise), reliability=round(rel, 6),
                  measured_on=source or history.source or "the given history", tasks=n, figures=figs,
                  sources=dict(sources or {}))


@functools.lru_cache(maxsize=1)
def shipped_policy() -> Policy:
    """The policy chosen on the 70 NTCIR-19 training tasks, shipped with the package (see the module docstring)."""
    from importlib.resources import files

    res = files("modelseek") / "resources" / "funnel" / SHIPPED_POLICY
    return Policy.from_dict(json.loads(res.read_text(encoding="utf-8")), path=str(res))


__all__ = ["FIGURE_FINETUNES", "NESTED", "POLICY_FINETUNES", "Policy", "choose_policy", "shipped_policy"]
