"""Speed of the duel leaderboard against a per-pair loop of the same tests, measured in the same run.

1. 8 models x 5 tasks (300-400 samples; 2 AUROC, accuracy, exact match, perplexity): the command line
   ``modelseek duel tournament ... --json`` in a fresh process (start-up included), the same tournament
   warm in-process, and the per-pair loop over all 280 duels (p-values compared).
2. 50 models x 50 tasks (the BenCzechMark configuration: 23 AUROC, 13 accuracy, 7 exact match,
   7 perplexity; 300-3,000 samples per task): the full tournament, and one new pre-submission against
   49 published models in a SQLite store; the per-pair loop is timed on a sample of duels per metric and
   extrapolated (the whole loop would take hours).

The per-pair loop is what the reference implementation does for every duel: it recomputes both models'
test inputs from scratch, loops ROC thresholds in Python and calls ``sklearn.metrics.auc`` once per
posterior draw, loops bootstrap resamples in Python, and calls ``scipy.stats.ttest_rel`` per pair. It uses
the same random streams as the vectorised engine, so both give the same p-values.

    python benchmarks/duel_speed.py [--sample 4] [--skip-8x5-baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from scipy import stats as st  # noqa: E402
from sklearn.metrics import auc as sk_auc  # noqa: E402

from modelseek.duel.config import LeaderboardConfig, Metric, Test  # noqa: E402
from modelseek.duel.engine import Settings  # noqa: E402
from modelseek.duel.tournament import tournament  # noqa: E402
from modelseek.core.stats.bootstrap import _indices  # noqa: E402
from modelseek.core.stats.seeding import derive_rng  # noqa: E402
from modelseek.testing.duel import make_submissions, write_submissions  # noqa: E402


# ------------------------------------------------------------------------------ the per-pair baseline
def loop_ttest(a, b) -> float:
    p = st.ttest_rel(a, b).pvalue
    if np.isnan(p):
        return 1.0
    return p / 2 if a.mean() > b.mean() else 1 - p / 2


def _loop_draws(gold, probs, rng, s: Settings) -> np.ndarray:
    total = np.zeros(s.n_draws)
    used = 0
    for c in range(probs.shape[1]):
        pos = gold == c
        if pos.all() or not pos.any():
            continue
        scores = probs[:, c]
        thr = np.unique(scores)[::-1]
        if s.n_thresholds is not None and thr.size > s.n_thresholds:
            thr = np.unique(np.quantile(scores, np.linspace(0, 1, s.n_thresholds)))[::-1]
        tp, fp = [0], [0]
        for t in thr:                                   # confusion matrix per threshold
            pred = scores >= t
            tp.append(int(np.sum(pred & pos)))
            fp.append(int(np.sum(pred & ~pos)))
        tp, fp = np.array(tp), np.array(fp)
        fpr = fp / (~pos).sum()
        w = (np.concatenate([fpr[1:], fpr[-1:]]) - np.concatenate([fpr[:1], fpr[:-1]])) / 2
        keep = w != 0
        tpr = rng.beta(tp[keep] + 1.0, (pos.sum() - tp[keep]) + 1.0, size=(s.n_draws, int(keep.sum())))
        total += np.array([sk_auc(fpr[keep], tpr[d]) for d in range(s.n_draws)])   # one auc call per draw
        used += 1
    return total / used


def loop_auroc(task, da, db, ma, mb, s: Settings) -> float:
    a = _loop_draws(da.gold, da.probs, derive_rng(s.seed, task, ma, "auroc"), s)
    b = _loop_draws(db.gold, db.probs, derive_rng(s.seed, task, mb, "auroc"), s)
    return float((a[:, None] <= b[None, :]).mean())


def loop_bootstrap(task, da, db, metric: Metric, s: Settings) -> float:
    n = da.n
    idx = _indices(n, s.n_resamples, derive_rng(s.seed, task, "bootstrap-plan"))
    if metric is Metric.WORD_PERPLEXITY:
        stat = lambda d, i: np.exp(-d.loglik[i].sum() / d.words[i].sum())  # noqa: E731
        obs = stat(db, slice(None)) - stat(da, slice(None))               # lower is better
        deltas = [stat(db, idx[r]) - stat(da, idx[r]) for r in range(s.n_resamples)]
    else:
        obs = da.values.mean() - db.values.mean()
        deltas = [da.values[idx[r]].mean() - db.values[idx[r]].mean() for r in range(s.n_resamples)]
    if obs <= 0:
        return 1.0
    return float(np.mean(np.array(deltas) > 2 * obs))


def loop_duel(config, task, sa, sb, s: Settings) -> float:
    spec = config.spec(task)
    da, db = sa.data[task], sb.data[task]
    if spec.metric.test is Test.TTEST:
        return loop_ttest(da.values, db.values)
    if spec.metric.test is Test.AUROC:
        return loop_auroc(task, da, db, sa.model, sb.model, s)
    return loop_bootstrap(task, da, db, spec.metric, s)


# -------------------------------------------------------------------------------------------- helpers
def _metric_mix_config(n_tasks_per_metric: dict[str, int]) -> LeaderboardConfig:
    full = LeaderboardConfig.load()
    picked = {}
    for metric, k in n_tasks_per_metric.items():
        for t in [t for t in full.tasks if t.metric.value == metric][:k]:
            picked[t.task] = {"category": t.category, "metric": metric, "name": t.name}
    return LeaderboardConfig.from_dict({"tasks": picked})


def _fmt(sec: float) -> str:
    if sec >= 3600:
        return f"{sec / 3600:.1f} h"
    if sec >= 120:
        return f"{sec / 60:.1f} min"
    return f"{sec:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=4, help="50x50: duels per metric timed in the per-pair loop")
    ap.add_argument("--skip-8x5-baseline", action="store_true")
    args = ap.parse_args()
    s = Settings(seed=0)
    rows = []
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {np.__version__}", flush=True)

    # ------------------------------------------------------------------------------------ 8 x 5
    cfg5 = _metric_mix_config({"avg_mcauroc": 2, "acc": 1, "exact_match": 1, "word_perplexity": 1})
    with tempfile.TemporaryDirectory() as tmp:
        meta = Path(tmp) / "metadata.json"
        meta.write_text(json.dumps(cfg5.to_dict()), encoding="utf-8")
        paths = write_submissions(Path(tmp) / "subs", config=cfg5, n_models=8, n_samples=(300, 400), seed=1)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        cmd = [sys.executable, "-m", "modelseek", "duel", "tournament", *map(str, paths), "--metadata", str(meta),
               "--seed", "0", "--json"]
        cli_times, cli_cpu = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cli_times.append(time.perf_counter() - t0)
            cli_cpu.append((c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime))
        duels = json.loads(out)["duels"]
        from modelseek.duel.submission import load_submission

        subs8 = [load_submission(p, cfg5) for p in paths]
    t0, c0 = time.perf_counter(), time.process_time()
    res8 = tournament(subs8, cfg5, s)
    warm8, warm8_cpu = time.perf_counter() - t0, time.process_time() - c0
    assert [d["p_value"] for d in duels] == [d["p_value"] for d in res8.duels()]  # CLI == in-process
    best = int(np.argmin(cli_times))
    rows.append(("8 x 5, 300-400 samples (280 duels)", "CLI, fresh process incl. start-up (best of 3)",
                 _fmt(cli_times[best]), _fmt(cli_cpu[best]), "< 5 s"))
    rows.append(("8 x 5", "in-process, warm", _fmt(warm8), _fmt(warm8_cpu), ""))
    print(f"8x5: CLI {min(cli_times):.2f} s (runs {', '.join(f'{x:.2f}' for x in cli_times)}), warm {warm8:.2f} s",
          flush=True)
    if not args.skip_8x5_baseline:
        t0, c0 = time.perf_counter(), time.process_time()
        diffs = []
        by_name = {x.model: x for x in subs8}
        for d in duels:
            p = loop_duel(cfg5, d["task"], by_name[d["a"]], by_name[d["b"]], s)
            diffs.append(abs(p - d["p_value"]))
        loop8, loop8_cpu = time.perf_counter() - t0, time.process_time() - c0
        rows.append(("8 x 5", "per-pair loop of the same tests, warm", _fmt(loop8), _fmt(loop8_cpu),
                     f"{loop8 / warm8:.0f}x slower than warm; max abs p-value difference {max(diffs):.1e}"))
        print(f"8x5: per-pair loop {loop8:.1f} s, max |dp| {max(diffs):.2e}", flush=True)

    # ---------------------------------------------------------------------------------- 50 x 50
    cfg = LeaderboardConfig.load()
    t0 = time.perf_counter()
    subs = make_submissions(cfg, n_models=50, n_samples=(300, 3000), seed=2)
    print(f"50x50: generated in {time.perf_counter() - t0:.1f} s; samples per task "
          f"{min(x.n for x in subs[0].data.values())}-{max(x.n for x in subs[0].data.values())}", flush=True)
    t0, c0 = time.perf_counter(), time.process_time()
    res = tournament(subs, cfg, s)
    full, full_cpu = time.perf_counter() - t0, time.process_time() - c0
    n_duels = 50 * 49 * 50
    rows.append(("50 x 50, 300-3,000 samples (122,500 duels)", "full tournament, in-process", _fmt(full),
                 _fmt(full_cpu), "< 60 s"))
    print(f"50x50: full tournament {full:.1f} s", flush=True)

    from modelseek.duel.storage import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "lb.db", config=cfg, settings=s)
        t0 = time.perf_counter()
        store.publish_many(subs[:49])
        setup = time.perf_counter() - t0
        upload = subs[49].to_json().encode("utf-8")     # what a user uploads
        t0, c0 = time.perf_counter(), time.process_time()
        pv = store.presubmit(upload)
        pre, pre_cpu = time.perf_counter() - t0, time.process_time() - c0
        store.discard(pv.token)
        t0, c0 = time.perf_counter(), time.process_time()
        pv = store.presubmit(upload)
        pre_w, pre_w_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0 = time.perf_counter()
        store.confirm(pv.token)
        conf = time.perf_counter() - t0
        same = store.scores() == res.scores
        db_mb = (Path(tmp) / "lb.db").stat().st_size / 2**20
        store.close()
    mb = len(upload) / 2**20
    rows.append(("50 x 50", f"one new pre-submission, first in the process (a {mb:.0f} MiB upload parsed and "
                 "validated, profiles, 4,900 duels, SQLite with 49 published)", _fmt(pre), _fmt(pre_cpu),
                 "< 5 s; includes building the 7 bootstrap plans"))
    rows.append(("50 x 50", "the same pre-submission again (server warm: plans cached)", _fmt(pre_w),
                 _fmt(pre_w_cpu), "< 5 s"))
    rows.append(("50 x 50", "its confirmation", _fmt(conf), "", ""))
    rows.append(("50 x 50", "store import of 49 models (publish_many)", _fmt(setup), "", f"database {db_mb:.0f} MiB"))
    print(f"50x50: import {setup:.1f} s, pre-submission {pre:.2f} s (warm {pre_w:.2f} s), confirm {conf:.2f} s, "
          f"stored scores == full tournament: {same}", flush=True)

    # per-pair loop, sampled per metric and extrapolated
    rng = np.random.default_rng(0)
    per_metric = {}
    diffs = []
    for metric in sorted({t.metric for t in cfg.tasks}, key=lambda m: m.value):
        tasks = [t.task for t in cfg.tasks if t.metric is metric]
        times = []
        for _ in range(args.sample):
            task = tasks[int(rng.integers(len(tasks)))]
            a, b = rng.choice(50, 2, replace=False)
            t0 = time.perf_counter()
            p = loop_duel(cfg, task, subs[a], subs[b], s)
            times.append(time.perf_counter() - t0)
            diffs.append(abs(p - res.pvalues[task][a, b]))
        per_metric[metric] = (float(np.mean(times)), len(tasks))
        print(f"  per-pair loop, {metric.value}: {np.mean(times):.3f} s per duel ({len(tasks)} tasks)", flush=True)
    est_full = sum(mean * n_tasks * 50 * 49 for mean, n_tasks in per_metric.values())
    est_pre = sum(mean * n_tasks * 2 * 49 for mean, n_tasks in per_metric.values())
    rows.append(("50 x 50", f"per-pair loop, full ({args.sample} duels per metric timed, extrapolated)",
                 _fmt(est_full), "", f"{est_full / full:.0f}x slower; max abs p diff {max(diffs):.1e}"))
    rows.append(("50 x 50", "per-pair loop, one pre-submission (extrapolated)", _fmt(est_pre), "",
                 f"{est_pre / pre:.0f}x slower"))

    print(f"\nload average during the run: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores")
    print("\n| benchmark | what | wall time | CPU time | note |\n|---|---|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    assert n_duels == len(res.duels())


if __name__ == "__main__":
    main()
