"""What replay (:mod:`.replay`) says: intervals, the funnel's order per budget, and the measured values the funnel
plans with.

* :func:`summarize` — per budget and policy, the mean of every metric over tasks with a percentile bootstrap
  interval (:func:`modelseek.core.stats.bootstrap.bootstrap_ci`), the paired difference of the funnel's order to the
  best
  plain policy (:func:`~modelseek.core.stats.bootstrap.paired_bootstrap`) and which order the funnel used, and why;
* :func:`sequential_wins` — the rule that ships the sequential order: its mean nDCG@5 is above the plain top-k's
  at ``k = 3`` or ``k = 5`` and not below it at any budget;
* :func:`shipped_history` — the NTCIR-19 fine-tuning results the package ships with its default ranker (70 tasks x
  20 models, normalized F1 as stored in the artifact), the history the funnel measures on by default;
* :func:`measure` / :func:`budget_curve` — reliabilities of the prior (and signals) and the expected nDCG@5 and
  regret after 0, 1, 3, 5 fine-tunes, replayed on a history (cached per history), for ``select`` and ``rank``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..data.truth import GradingScheme, GroundTruth
from ...core.errors import InputError
from .answer import final_ranking
from .replay import (FUNNEL, MERGE_SUFFIX, METRICS, PRIOR, SEQUENTIAL, Choices, PriorForm, ReplayData,
                     choose_on_history, history_gains, merge_name, replay)
from ...core.stats.bootstrap import bootstrap_ci, paired_bootstrap

CURVE_FINETUNES = (0, 1, 3, 5)
#: the seed noise of a fine-tuned F1 (sd, in F1) that replay assumes when it measures for ``select`` and ``rank``.
#: An ASSUMPTION, not a measurement: the organisers publish one F1 per task x model (no repeats), so nothing here
#: measures it. A plausible range is 0 to 0.02 F1 for BERT-size models fine-tuned on about 800 texts; ``modelseek
#: replay --noise 0,0.005,0.01,0.02`` shows how the curves move over it, and ``select --noise`` changes it.
CURVE_NOISE = 0.01
#: the budgets (fine-tunes) at which replay chooses the final ranking for ``select`` (a larger k takes the last's)
CHOICE_FINETUNES = tuple(range(1, 11))
CURVE_REPEATS = 20
SHIPPED = "shipped NTCIR-19 truth"
#: the order the funnel fine-tunes down when the sequential one is not shipped
PLAIN_ORDER = "plain top-k (down the prior's order, or the fused order when estimators ran)"
#: why the funnel fine-tunes down the plain order: what ``benchmarks/replay_ntcir.py`` measured (and
#: tests/funnel/test_replay.py checks on the NTCIR data)
NOT_SHIPPED = ("the sequential order is not used: on the 70 NTCIR-19 training tasks the joint model of the "
               "candidates earns no weight (its learned trust is 0 in every fold, so the order is the prior's top-k; "
               "trusted fully it loses at k = 1, 3, 5 and 10: docs/results/replay.md)")


def sequential_wins(data: ReplayData) -> tuple[bool, str]:
    """Whether the sequential order is the funnel's, and why (see the module docstring)."""
    if SEQUENTIAL not in data.values:
        return False, "the sequential order was not replayed"
    base = data.base
    diff = {k: float(data.values[SEQUENTIAL][k]["ndcg@5"].mean() - data.values[base][k]["ndcg@5"].mean())
            for k in data.finetunes if k > 0}
    at = [k for k in (3, 5) if k in diff]
    if not at:
        return False, "replay did not measure k = 3 or 5"
    worse = [k for k, d in diff.items() if d < -1e-12]
    better = [k for k in at if diff[k] > 1e-12]
    if better and not worse:
        return True, (f"replay: sequential beats the plain top-k ({base}) at k = "
                      f"{', '.join(map(str, better))} (nDCG@5 {', '.join(f'{diff[k]:+.3f}' for k in better)})")
    where = ", ".join(f"k={k} {d:+.3f}" for k, d in diff.items())
    return False, f"replay: sequential does not beat the plain top-k ({base}) (nDCG@5 difference {where})"


def funnel_policy(data: ReplayData, k: int) -> str:
    """The policy the funnel follows at budget ``k``: the sequential order where it wins, else the plain order with
    the final ranking each split's history chose (fine-tuned first, or the expected-gain merge)."""
    if k > 0 and sequential_wins(data)[0]:
        return SEQUENTIAL
    return data.final.get(k, data.base)


def _interval(values: np.ndarray, n_boot: int, seed: int) -> dict[str, float]:
    ci = bootstrap_ci(values, n_resamples=n_boot, seed=seed)
    return {"mean": ci.mean, "low": ci.low, "high": ci.high}


def _paired(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int) -> dict[str, float]:
    c = paired_bootstrap(a, b, n_resamples=n_boot, seed=seed)
    return {"diff": c.mean_diff, "low": c.low, "high": c.high}


def _budget(data: ReplayData, k: int, n_boot: int, seed: int) -> dict[str, Any]:
    policies: dict[str, Any] = {}
    for name, by_k in data.values.items():
        iv = {m: _interval(by_k[k][m], n_boot, seed) for m in METRICS}
        policies[name] = {**{m: iv[m]["mean"] for m in METRICS},
                          "intervals": {m: [iv[m]["low"], iv[m]["high"]] for m in METRICS}}
    simple = [p for p in data.values if p != SEQUENTIAL and p != FUNNEL and not p.endswith(MERGE_SUFFIX)]
    best = max(simple, key=lambda p: (policies[p]["ndcg@5"], p == data.base))
    chosen = funnel_policy(data, k)
    out: dict[str, Any] = {"k": k, "cost_finetunes": min(k, len(data.model_ids)), "policies": policies,
                           "funnel": chosen, "best_simple": best,
                           "funnel_vs_best_simple": {m: _paired(data.values[chosen][k][m], data.values[best][k][m],
                                                                n_boot, seed) for m in ("ndcg@5", "regret")}}
    mname = merge_name(data.base)
    if mname in data.values:
        out["merge_vs_plain"] = {m: _paired(data.values[mname][k][m], data.values[data.base][k][m], n_boot, seed)
                                 for m in METRICS}
    if SEQUENTIAL in data.values:
        out["sequential_vs_plain"] = {m: _paired(data.values[SEQUENTIAL][k][m], data.values[data.base][k][m],
                                                 n_boot, seed) for m in ("ndcg@5", "regret")}
    return out


def figures_kind(data: ReplayData) -> str:
    """What a replay's figures are: nested cross-fitting within the replayed tasks, or withheld tasks."""
    if data.folds is not None:
        return (f"nested: {data.folds}-fold cross-fitting by task within the {len(data.task_ids)} replayed tasks, "
                f"each fold's choices made on its other folds alone; not withheld tasks")
    return (f"withheld: the {len(data.task_ids)} replayed tasks, every choice and fit made on the history "
            f"({data.history}) alone")


def summarize(data: ReplayData, n_boot: int = 1000, seed: int | None = None, source: str = "") -> dict[str, Any]:
    """The JSON-ready summary of a replay (``{"budgets": [{"k", "policies", "funnel", ...}], ...}``)."""
    s = data.seed if seed is None else seed
    shipped, why = sequential_wins(data)
    if SEQUENTIAL not in data.values:
        why = NOT_SHIPPED
    return {"truth": source, "tasks": len(data.task_ids), "models": len(data.model_ids), "noise": data.noise,
            "repeats": data.repeats, "folds": data.folds, "history": data.history, "seed": data.seed,
            "figures": figures_kind(data),
            "bootstrap": n_boot, **data.extra, "plain_order": data.base,
            "sequential": {"shipped": shipped, "why": why}, "reliability": data.reliability,
            "budgets": [_budget(data, k, n_boot, s) for k in data.finetunes]}


def render(summary: dict[str, Any]) -> str:
    """The summary as a text table: one block per budget, one line per policy."""
    hist = summary["history"] if summary["folds"] is None else f"{summary['folds']}-fold cross-fitting by task"
    lines = [f"replay of {summary['truth'] or 'the ground truth'}: {summary['tasks']} tasks x {summary['models']} "
             f"models; policies learn from {hist}; seed noise sd {summary['noise']:g} x {summary['repeats']} "
             f"draw(s); means over tasks [95% bootstrap interval]",
             f"figures: {summary['figures']}",
             "reliability (mean within-task rank correlation with the recorded score): "
             + ", ".join(f"{k} {v:.2f}" for k, v in summary["reliability"].items())]
    head = f"  {'policy':<16} {'nDCG@1':>21} {'nDCG@3':>21} {'nDCG@5':>21} {'regret':>24}"
    for b in summary["budgets"]:
        lines.append(f"k = {b['k']} fine-tune(s) (cost: {b['cost_finetunes']}):")
        lines.append(head)
        for name, p in b["policies"].items():
            cells = [f"{p[m]:.3f} [{p['intervals'][m][0]:.3f}, {p['intervals'][m][1]:.3f}]" for m in METRICS[:3]]
            r = p["intervals"]["regret"]
            cells.append(f"{p['regret']:.4f} [{r[0]:.4f}, {r[1]:.4f}]")
            mark = "  <- funnel" if name == b["funnel"] else ""
            lines.append(f"  {name:<16} " + " ".join(f"{c:>21}" for c in cells[:3]) + f" {cells[3]:>24}{mark}")
        d = b["funnel_vs_best_simple"]["ndcg@5"]
        lines.append(f"  funnel ({b['funnel']}) - best plain ({b['best_simple']}): nDCG@5 {d['diff']:+.3f} "
                     f"[{d['low']:+.3f}, {d['high']:+.3f}]")
        if "merge_vs_plain" in b and b["k"] > 0:
            d = b["merge_vs_plain"]
            lines.append(f"  {summary['plain_order']}{MERGE_SUFFIX} - {summary['plain_order']} (expected-gain merge - "
                         "fine-tuned first): " + ", ".join(
                             f"{m} {d[m]['diff']:+.3f} [{d[m]['low']:+.3f}, {d[m]['high']:+.3f}]" for m in METRICS[:3])
                         + f", regret {d['regret']['diff']:+.4f} [{d['regret']['low']:+.4f}, "
                           f"{d['regret']['high']:+.4f}]")
        if "sequential_vs_plain" in b and b["k"] > 0:
            d = b["sequential_vs_plain"]["ndcg@5"]
            g = b["sequential_vs_plain"]["regret"]
            lines.append(f"  sequential - {summary['plain_order']}: nDCG@5 {d['diff']:+.3f} [{d['low']:+.3f}, "
                         f"{d['high']:+.3f}], regret {g['diff']:+.4f} [{g['low']:+.4f}, {g['high']:+.4f}]")
    if "trust" in summary:
        lines.append("sequential (blend): trust in the joint model learned per fold on its history alone: "
                     + ", ".join(f"{t:g}" for t in summary["trust"]) + " (0 = the plain top-k)")
    if "prior_form" in summary:
        lines.append("chosen per fold on its history alone (inner cross-fitting): prior form "
                     + ", ".join(summary["prior_form"]) + "; expected-gain merge at k = "
                     + "; ".join(f"{k}: {', '.join('yes' if x else 'no' for x in v)}"
                                 for k, v in summary.get("merge", {}).items()))
    lines.append(f"order used by the funnel: {'sequential' if summary['sequential']['shipped'] else 'plain top-k'} "
                 f"({summary['sequential']['why']})")
    return "\n".join(lines)


def plot(summaries: dict[str, dict[str, Any]], path: str | Path) -> Path:
    """nDCG@5 and regret against the number of fine-tunes, one line per policy with its interval as a band;
    one row of panels per summary (e.g. NTCIR and a generated zoo)."""
    from ...core.plots import _figure, save_figure  # lazy: pandas

    plt = _figure()
    fig, axes = plt.subplots(len(summaries), 2, figsize=(10, 3.4 * len(summaries)), squeeze=False)
    for row, (title, s) in zip(axes, summaries.items()):
        ks = [b["k"] for b in s["budgets"]]
        for name in s["budgets"][0]["policies"]:
            for ax, m in zip(row, ("ndcg@5", "regret")):
                mean = [b["policies"][name][m] for b in s["budgets"]]
                lo = [b["policies"][name]["intervals"][m][0] for b in s["budgets"]]
                hi = [b["policies"][name]["intervals"][m][1] for b in s["budgets"]]
                ax.plot(ks, mean, marker="o", label=name)
                ax.fill_between(ks, lo, hi, alpha=0.15)
        for ax, m in zip(row, ("nDCG@5 (official grades)", "regret of the final top-1")):
            ax.set_xlabel("fine-tunes (k)")
            ax.set_ylabel(m)
            ax.set_title(f"{title} (noise sd {s['noise']:g}, {s['tasks']} tasks)", fontsize=9)
            ax.grid(alpha=0.3)
        row[0].legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def shipped_history() -> GroundTruth:
    """The fine-tuning results shipped with the default ranker (see the module docstring)."""
    import json

    import pandas as pd  # lazy: pandas

    from ..rankers._artifact import read_artifact, unpack_array  # lazy: start-up
    from ..rankers.default import artifact_dir  # lazy: start-up

    spec = json.loads((artifact_dir() / "default.json").read_text(encoding="utf-8"))
    for name in (spec.get("artifact"), "adaptive-ntcir19.json"):
        path = artifact_dir() / str(name)
        doc = read_artifact(path) if path.is_file() else {}
        if "targets" in doc.get("arrays", {}):
            y = unpack_array(doc["arrays"]["targets"]).astype(np.float64)
            tasks, models = doc["fitted_task_ids"], doc["model_ids"]
            frame = pd.DataFrame({"task_id": np.repeat(tasks, len(models)), "model_id": np.tile(models, len(tasks)),
                                  "f1": y.ravel()})
            crit = None
            if "tiers" in doc["arrays"]:  # the organisers' criticality tiers, as the ranker was fitted with them
                from ..rankers.adaptive import TIERS  # lazy: start-up

                tiers = unpack_array(doc["arrays"]["tiers"]).astype(int).tolist()
                crit = {t: TIERS[i] for t, i in zip(tasks, tiers)}
            return GroundTruth(frame, criticality=crit, source=f"{SHIPPED} ({path.name})")
    raise InputError("the package ships no fine-tuning history (no ranker artifact with stored targets)",
                     path=artifact_dir())


@dataclass(frozen=True)
class Measured:
    """What replay on a history measured, for planning and for the answer."""

    source: str
    tasks: int
    reliability: dict[str, float]
    curve: tuple[dict[str, Any], ...]       # per k: {"k", "ndcg@5", "ndcg@5_low", "ndcg@5_high", "regret", ...}
    order: str                              # the order the funnel fine-tunes down
    why: str
    noise: float = CURVE_NOISE
    base: str = PRIOR                       # the plain order replay measured ("prior", or "rrf" with signals)
    choices: Choices | None = None          # prior form and final ranking chosen by cross-fitting on the history
    truth: GroundTruth | None = None        # the history itself (the merge's gain tables are learned on it)
    signals: tuple = ()                     # the estimator's scores on the history's tasks (runs), if recorded
    prior_run: Any = None                   # the prior's scores on the history's tasks, where it is not fitted there
    _merge: dict = field(default_factory=dict, compare=False, repr=False)  # merge_at's answers, per k

    def merge_at(self, k: int) -> bool:
        """Whether the funnel's final ranking after ``k`` fine-tunes is the expected-gain merge (chosen at this very
        ``k`` on the history, as replay chooses it, for the order chosen there)."""
        if k not in self._merge:
            self._merge[k] = merge_at(self.choices, k, self.truth, self.noise, self.signals, self.prior_run)
        return self._merge[k]

    @property
    def walk(self) -> str:
        """The order the funnel fine-tunes down, as chosen on the history (``rrf`` where nothing was chosen)."""
        return self.choices.order if self.choices is not None else PRIOR

    @property
    def prior_form(self) -> PriorForm:
        return self.choices.form if self.choices is not None else PriorForm.AVGRANK

    def gain_tables(self, k: int, scheme: str = "ntcir", model_ids: list[str] | None = None):
        """The merge's gain tables for ``k`` fine-tunes, learned on the history (over ``model_ids`` where the
        history scored them all, as replay learns them over the replayed candidates; else over all of its own)."""
        if self.truth is None:
            raise InputError("no history to learn the merge's gain tables from")
        models = [str(c) for c in self.truth.matrix("f1").columns]
        if model_ids and set(model_ids) <= set(models):
            models = list(model_ids)
        return history_gains(self.truth, models, [k], self.prior_form, GradingScheme.parse(scheme), self.noise,
                             0)[k]

    def gain_per_finetune(self) -> list[dict[str, float]]:
        """Between successive budgets of the curve: the expected nDCG@5 gained and regret saved per fine-tune."""
        from itertools import pairwise

        return [{"from": a["k"], "to": b["k"], "ndcg@5": (b["ndcg@5"] - a["ndcg@5"]) / (b["k"] - a["k"]),
                 "regret": (a["regret"] - b["regret"]) / (b["k"] - a["k"])} for a, b in pairwise(self.curve)]

    def describe(self) -> list[str]:
        rel = ", ".join(f"{k} {v:.2f}" for k, v in self.reliability.items())
        out = [f"measured by replay on {self.source} ({self.tasks} tasks, 5-fold by task, seed noise sd "
               f"{self.noise:g}): reliability (within-task rank correlation with fine-tuned F1) {rel}",
               "  fine-tunes  expected nDCG@5 [95% interval]  expected regret"]
        out += [f"  {int(p['k']):>10}  {p['ndcg@5']:.3f} [{p['ndcg@5_low']:.3f}, {p['ndcg@5_high']:.3f}]"
                f"{'':>8}{p['regret']:.4f}" for p in self.curve]
        out.append("  expected gain per fine-tune: " + "; ".join(
            f"{g['from']}->{g['to']}: nDCG@5 {g['ndcg@5'] + 0.0:+.3f}, regret {0.0 - g['regret'] + 0.0:+.4f}"
            for g in self.gain_per_finetune()))
        out.append(f"  fine-tuning order: {self.order} ({self.why})")
        if self.choices is not None:
            merged = [k for k, v in self.choices.merge.items() if v]
            crel = self.choices.reliability
            out.append(f"  chosen by cross-fitting on the history: fine-tuning order {self.choices.order}"
                       + (f" (reliabilities measured there: prior {crel[0]:.2f}, estimator "
                          f"{', '.join(f'{r:.2f}' for r in crel[1:])})" if crel else
                          " (no estimator scores on the history's tasks: the order is not chosen there)")
                       + "; prior form " + ("given" if self.prior_run is not None else self.prior_form.value)
                       + "; final ranking "
                       + (f"by expected official gain (the merge) after k = {', '.join(map(str, merged))} fine-tunes, "
                          f"fine-tuned first otherwise" if merged else "fine-tuned first at every k"))
        return out


def measure(history: GroundTruth | None = None, signals: tuple = (), finetunes: tuple[int, ...] = CURVE_FINETUNES,
            sequential: bool = True, tier: str | None = None, noise: float = CURVE_NOISE,
            choices: bool = False, prior_run: Any = None) -> Measured:
    """Replay the policies on ``history`` (default: :func:`shipped_history`) with 5-fold cross-fitting, seed
    noise ``noise`` (:data:`CURVE_NOISE`, an assumption) and :data:`CURVE_REPEATS` draws; the curve is the
    funnel's policy's, over the history's tasks of criticality ``tier`` when one is given (over all of them
    otherwise). With ``choices``, also what the whole history chooses by cross-fitting (the prior's form, the order
    to fine-tune down where ``signals`` score the history, and the final ranking at each of
    :data:`CHOICE_FINETUNES`), which ``select`` follows. ``prior_run``: the prior's scores on the history's tasks
    (where the prior is not the one fitted on the history)."""
    if history is None and not signals:
        data = _replayed(None, (), tuple(finetunes), sequential, float(noise))
    hist = history if history is not None else shipped_history()
    if history is not None or signals:
        data = _replay_history(hist, tuple(signals), tuple(finetunes), sequential, float(noise), prior_run)
    if tier is not None:
        keep = [t for t in data.task_ids if hist.criticality(t).value == tier]
        if len(keep) < 2:
            raise InputError(f"the history holds {len(keep)} task(s) of criticality {tier!r}; at least 2 needed",
                             path=hist.source or None)
        data = restrict(data, keep)
    from dataclasses import replace

    m = _measured(data, hist.source or "the given history", tier)
    m = replace(m, noise=float(noise), base=data.base, truth=hist, signals=tuple(signals), prior_run=prior_run)
    if choices:
        m = replace(m, choices=history_choices(hist, tuple(signals), float(noise), prior_run))
    return m


def merge_at(choices: Choices | None, k: int, history: GroundTruth | None = None, noise: float = CURVE_NOISE,
             signals: tuple = (), prior_run: Any = None) -> bool:
    """Whether ``choices`` rank by the expected-gain merge after ``k`` fine-tunes; a ``k`` they were not made at
    is chosen on ``history`` the same way (:func:`.replay.choose_on_history`), or without a history takes the
    largest budget's choice."""
    if choices is None or k <= 0 or not choices.merge:
        return False
    if k in choices.merge:
        return bool(choices.merge[k])
    if history is not None:
        models = [str(c) for c in history.matrix("f1").columns]
        return bool(choose_on_history(history, models, signals, [k], noise=noise, repeats=CURVE_REPEATS,
                                      folds=min(5, len(history.task_ids)), seed=0, prior_run=prior_run
                                      ).merge.get(k, False))
    return bool(choices.merge[max(choices.merge)]) if k > max(choices.merge) else False


def rerank(order: list[str], finetuned: dict[str, float], history: GroundTruth | None = None,
           noise: float = CURVE_NOISE) -> tuple[list[str], str]:
    """The funnel's final ranking of ``order`` after fine-tuning the candidates of ``finetuned`` (id -> validation
    score), as replay chose it on ``history`` (default: the shipped NTCIR-19 results) by cross-fitting: the
    expected-gain merge where it won at this many fine-tunes, else fine-tuned first; and how (one line). What
    ``rank --verify-top`` prints and ``select`` does."""
    hist = history if history is not None else shipped_history()
    choices = history_choices(hist, (), noise)
    k = len(finetuned)
    ft = {c: (0.0, float(v)) for c, v in finetuned.items()}
    if not merge_at(choices, k, hist, noise):
        return final_ranking(order, ft), (f"fine-tuned first, then the ranking's order (replay on "
                                          f"{hist.source or 'the history'} chose it at k = {k})")
    models = [str(c) for c in hist.matrix("f1").columns]
    tables = history_gains(hist, models, [k], choices.form, GradingScheme.NTCIR, noise, 0)[k]
    return final_ranking(order, ft, tables), (f"by expected official gain (the merge replay chose on "
                                              f"{hist.source or 'the history'} at k = {k} by cross-fitting)")


def history_choices(history: GroundTruth, signals: tuple = (), noise: float = CURVE_NOISE, prior_run: Any = None
                    ) -> Choices:
    """What ``history`` as a whole chooses by cross-fitting (:func:`.replay.choose_on_history`) at
    :data:`CHOICE_FINETUNES`, with the noise ``select`` measures with (cached for the shipped history)."""
    if history is None or ((history.source or "").startswith(SHIPPED) and not signals and prior_run is None):
        return _shipped_choices(float(noise))
    return _choices(history, signals, noise, prior_run)


def _choices(history: GroundTruth, signals: tuple, noise: float, prior_run: Any = None) -> Choices:
    models = [str(c) for c in history.matrix("f1").columns]
    return choose_on_history(history, models, signals, CHOICE_FINETUNES, noise=noise, repeats=CURVE_REPEATS,
                             folds=min(5, len(history.task_ids)), seed=0, prior_run=prior_run)


@functools.lru_cache(maxsize=4)
def _shipped_choices(noise: float) -> Choices:
    return _choices(shipped_history(), (), noise)


def restrict(data: ReplayData, task_ids: list[str]) -> ReplayData:
    """``data`` over some of its tasks (each task's values are its own, so nothing is recomputed)."""
    from dataclasses import replace

    idx = np.array([data.task_ids.index(t) for t in task_ids], dtype=int)
    values = {p: {k: {m: v[idx] for m, v in mets.items()} for k, mets in by_k.items()}
              for p, by_k in data.values.items()}
    return replace(data, task_ids=list(task_ids), values=values)


@functools.lru_cache(maxsize=4)
def _replayed(_: None, signals: tuple, finetunes: tuple[int, ...], sequential: bool, noise: float = CURVE_NOISE
              ) -> ReplayData:
    """The replay of the shipped history (cached: it is the same for every task of a process)."""
    return _replay_history(shipped_history(), signals, finetunes, sequential, noise)


def _replay_history(history: GroundTruth, signals: tuple, finetunes: tuple[int, ...], sequential: bool,
                    noise: float = CURVE_NOISE, prior_run: Any = None) -> ReplayData:
    return replay(history, signals=signals, finetunes=finetunes, noise=noise, repeats=CURVE_REPEATS,
                  folds=min(5, len(history.task_ids)), seed=0, sequential=sequential, prior_run=prior_run)


def _measured(data: ReplayData, source: str, tier: str | None) -> Measured:
    s = summarize(data, n_boot=1000)
    curve = []
    for b in s["budgets"]:
        p = b["policies"][b["funnel"]]
        curve.append({"k": b["k"], "ndcg@5": p["ndcg@5"], "ndcg@5_low": p["intervals"]["ndcg@5"][0],
                      "ndcg@5_high": p["intervals"]["ndcg@5"][1], "regret": p["regret"],
                      "regret_low": p["intervals"]["regret"][0], "regret_high": p["intervals"]["regret"][1]})
    walked = sorted(set(data.extra.get("order") or [data.base]))
    order = SEQUENTIAL if s["sequential"]["shipped"] else (
        "the prior's top-k" if walked == [PRIOR] else
        f"{walked[0]} (chosen on every fold's history by cross-fitting)" if len(walked) == 1 else
        f"the order each fold's history chose ({', '.join(walked)})")
    return Measured(source=source + (f", its {tier}-criticality tasks" if tier else ""), tasks=len(data.task_ids),
                    reliability=dict(data.reliability), curve=tuple(curve), order=order, why=s["sequential"]["why"])


def budget_curve(history: GroundTruth | None = None, tier: str | None = None) -> Measured:
    """Expected nDCG@5 and regret after 0, 1, 3, 5 fine-tunes of the prior's top, ranked as the funnel ranks them
    (what ``rank`` prints), over the history's tasks of the task's criticality ``tier`` when given."""
    return measure(history, finetunes=CURVE_FINETUNES, sequential=False, tier=tier)


__all__ = ["CHOICE_FINETUNES", "CURVE_FINETUNES", "CURVE_NOISE", "PRIOR", "Measured", "budget_curve", "funnel_policy",
           "history_choices", "measure", "merge_at", "plot", "render", "rerank", "restrict", "sequential_wins",
           "shipped_history", "summarize"]
