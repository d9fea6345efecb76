"""Comparing evaluated runs: paired significance tests (t-test, randomisation test), bootstrap intervals of
the differences, Holm's correction per metric, and ranx-style letter marks (the verb behind ``modelseek
compare``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..core.errors import InputError
from ..core.stats.bootstrap import paired_bootstrap
from ..core.stats.multitest import holm
from ..core.stats.seeding import derive_rng


#: the most pairs of runs one comparison tests (each a randomisation test and a bootstrap per metric; the
#: all-pairs comparison of 32 runs is 496 pairs)
MAX_PAIRS = 500


def check_comparison(run_ids: Sequence[str], metrics: Sequence[str], baseline: str | None = None) -> list[str]:
    """What :func:`compare_runs` needs of its inputs, checked before any work (the CLI runs it before evaluating):
    at least two runs, no run id twice, a ``baseline`` among them, at most :data:`MAX_PAIRS` pairs, at least one
    metric. Each failure is a one-line :class:`~modelseek.core.errors.InputError` naming the parameter (``reports``,
    ``baseline``, ``metrics``). Returns the metrics, stripped and lower-cased."""
    ids = [str(i) for i in run_ids]
    if len(ids) < 2:
        raise InputError(f"a comparison needs at least two runs, got {len(ids)}"
                         + (f" ({ids[0]})" if ids else ""), field="reports")
    twice = sorted(i for i, n in Counter(ids).items() if n > 1)
    if twice:
        raise InputError(f"run id(s) {', '.join(map(repr, twice))} given more than once; run ids must differ "
                         f"(the same run compared with itself)", field="reports")
    if baseline is not None and baseline not in ids:
        shown = ", ".join(ids[:20]) + (f" ... ({len(ids):,} runs)" if len(ids) > 20 else "")
        raise InputError(f"baseline {baseline!r} is not a run id of the runs (run ids: {shown})", field="baseline")
    n_pairs = len(ids) - 1 if baseline is not None else len(ids) * (len(ids) - 1) // 2
    if n_pairs > MAX_PAIRS:
        # every pair is a randomisation test and a bootstrap per metric: the work grows with the square of the runs
        most = max(n for n in range(2, MAX_PAIRS + 2) if n * (n - 1) // 2 <= MAX_PAIRS)
        hint = (f"compare at most {MAX_PAIRS + 1:,} runs with a baseline" if baseline is not None else
                f"give --baseline RUN_ID (one pair per run) or at most {most} runs")
        raise InputError(f"{len(ids):,} runs make {n_pairs:,} pairs, over the {MAX_PAIRS:,} pairs a comparison "
                         f"tests; {hint}", field="reports")
    names = [str(m).strip().lower() for m in (metrics.split(",") if isinstance(metrics, str) else metrics)
             if str(m).strip()]
    if not names:
        raise InputError("name at least one metric", field="metrics")
    return names


def compare_runs(reports, metrics, baseline=None, test="t", alpha=0.05, permutations=10_000, resamples=1000,
            confidence=0.95, seed=0) -> dict:
    """Every pair of evaluated runs (or every run against ``baseline``) compared per metric, as a plain dict
    (what ``modelseek compare --json`` prints): each run's mean and the letters of the runs it is significantly
    better than (``test``'s Holm-corrected p below ``alpha``; regret: lower is better), and per pair the mean
    difference, the paired t-test and randomisation-test p (raw and Holm-corrected) and a bootstrap interval."""
    import numpy as np

    from ..core.stats.paired import randomization_test, ttest_rel  # lazy: scipy

    reports = list(reports)
    metrics = check_comparison([r.run_id for r in reports], metrics, baseline)
    for r in reports:
        missing = [m for m in metrics if m not in r.per_topic.columns]
        if missing:
            raise InputError(f"run {r.run_id!r} was not evaluated on {', '.join(missing)} (its report has "
                             f"{', '.join(map(str, r.per_topic.columns))})", field="metrics")
    ids = [r.run_id for r in reports]
    by_id = {r.run_id: r for r in reports}
    if baseline is not None:
        pairs = [(b, baseline) for b in ids if b != baseline]
    else:
        pairs = [(ids[i], ids[j]) for i in range(len(ids)) for j in range(i + 1, len(ids))]
    comparisons = []
    for m in metrics:
        rows = []
        for a, b in pairs:
            x = by_id[a].per_topic[m].to_numpy(dtype=float)
            y = by_id[b].per_topic[m].to_numpy(dtype=float)
            ok = np.isfinite(x) & np.isfinite(y)  # kendall has no value on a topic missing from a run
            x, y = x[ok], y[ok]
            t, p_t = ttest_rel(x, y)
            p_perm, exact = randomization_test(x, y, permutations, derive_rng(seed, "permutation", m, a, b))
            ci = (paired_bootstrap(x, y, resamples, confidence, derive_rng(seed, "bootstrap", m, a, b))
                  if x.size else None)
            rows.append({"metric": m, "a": a, "b": b, "n": int(x.size), "mean_a": float(x.mean()) if x.size else None,
                         "mean_b": float(y.mean()) if y.size else None,
                         "diff": float((x - y).mean()) if x.size else None, "t": _num(t), "p_t": _num(p_t),
                         "p_permutation": _num(p_perm), "permutation_exact": exact,
                         "ci_low": ci.low if ci else None, "ci_high": ci.high if ci else None})
        for key in ("p_t", "p_permutation"):
            adj = holm([np.nan if r[key] is None else r[key] for r in rows])
            for r, v in zip(rows, adj):
                r[key + "_holm"] = _num(v)
        comparisons += rows
    key = "p_t_holm" if test == "t" else "p_permutation_holm"
    letters = {rid: _letter(i) for i, rid in enumerate(ids)}
    marks = {rid: {m: "" for m in metrics} for rid in ids}
    lower = {m for m in metrics if m.startswith("regret")}
    for c in comparisons:
        p = c[key]
        if p is None or p >= alpha or c["diff"] in (None, 0.0):
            continue
        better = c["diff"] > 0 if c["metric"] not in lower else c["diff"] < 0
        winner, loser = (c["a"], c["b"]) if better else (c["b"], c["a"])
        marks[winner][c["metric"]] += letters[loser]
    for rid in ids:
        for m in metrics:
            marks[rid][m] = "".join(sorted(marks[rid][m]))
    return {
        "runs": {rid: {"letter": letters[rid], "mean": {m: _num(by_id[rid].mean()[m]) for m in metrics},
                       "better_than": marks[rid]} for rid in ids},
        "comparisons": comparisons,
        "settings": {"metrics": list(metrics), "baseline": baseline, "test": test, "alpha": alpha,
                     "correction": "holm", "permutations": permutations, "resamples": resamples,
                     "confidence": confidence, "seed": seed, "topics": len(reports[0].topics) if reports else 0},
    }


def _letter(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(97 + r) + s
    return s


def _num(v):
    v = float(v)
    return None if v != v else v
