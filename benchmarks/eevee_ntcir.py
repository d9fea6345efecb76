"""EEVEE on the NTCIR-19 model-retrieval ground truth: which k tasks should a new model be fine-tuned on to
predict its F1 on all the others? Models are rows, the 70 training tasks are benchmarks (metric: F1).

Reports the best k = 5 tasks and how well their cross-validated meta-model predicts each model's mean F1
on the other tasks (each model predicted only in the splits where it is a test model), against two
baselines measured in the same run: the model's mean F1 on the same 5 tasks, and 5 random tasks (10 draws).

    python benchmarks/eevee_ntcir.py --out docs/results/eevee_ntcir.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from modelseek.retrieval.data.truth import GroundTruth  # noqa: E402
from modelseek.eevee import BatchedEvaluator, MetaConfig, SearchConfig, Table, search  # noqa: E402

GT = ROOT.parent / "shared" / "data" / "ntcir19-mr" / "subtask-a" / "ground-truth.csv"


def mean_other_f1(ev: BatchedEvaluator, subset) -> tuple[np.ndarray, np.ndarray]:
    """(predicted, actual) mean F1 over the tasks outside ``subset``, per model (NaN if never a test model)."""
    table = ev.table
    pred = ev.predict(subset)                              # splits x models x tasks (NaN = training model)
    other = [j for j, b in enumerate(table.benchmarks) if b not in set(subset)]
    with warnings.catch_warnings():                        # training rows are all NaN: "mean of empty slice"
        warnings.simplefilter("ignore", RuntimeWarning)
        per_split = np.nanmean(pred[:, :, other], axis=2)  # splits x models
        predicted = np.nanmean(np.where(np.isnan(pred[:, :, other[0]]), np.nan, per_split), axis=0)
    actual = np.nanmean(table.values[:, other], axis=1)
    return predicted, actual


def training_mean_prediction(ev: BatchedEvaluator, subset) -> np.ndarray:
    """The no-model baseline: each model's mean F1 on the tasks outside ``subset`` predicted as the training
    models' average of it, in the splits where the model is a test model (averaged over them)."""
    table = ev.table
    other = [j for j, b in enumerate(table.benchmarks) if b not in set(subset)]
    per_model = np.nanmean(table.values[:, other], axis=1)
    preds = [[] for _ in table.models]
    for tr, te in ev.data.splits:
        for i in te:
            preds[i].append(per_model[tr].mean())
    return np.array([np.mean(p) if p else np.nan for p in preds])


def summary(pred, actual) -> dict:
    ok = ~np.isnan(pred)
    return {"mae": float(np.mean(np.abs(pred[ok] - actual[ok]))),
            "spearman": float(spearmanr(pred[ok], actual[ok]).statistic), "n_models": int(ok.sum())}


def evaluate(table: Table, meta: MetaConfig, k: int, generations: int, workers: int) -> dict:
    ev = BatchedEvaluator(table, meta, workers=workers)
    t0 = time.perf_counter()
    res = search(ev, k, SearchConfig(generations=generations, seed=0))
    wall = time.perf_counter() - t0
    best = list(res.best.subset)
    pred, actual = mean_other_f1(ev, best)
    other = [j for j, b in enumerate(table.benchmarks) if b not in set(best)]
    own = table.values[:, [table.benchmarks.index(b) for b in best]].mean(1)
    rng = np.random.default_rng(0)
    rand = []
    for _ in range(10):
        sub = list(rng.choice(table.benchmark_names, size=k, replace=False))
        p, a = mean_other_f1(ev, sub)
        rand.append(summary(p, a) | {"score": ev.score(sub).mean})
    out = {"meta_model": meta.model, "best": res.best.to_dict(), "wall_s": wall, "workers": ev.workers,
           "n_evaluated": res.n_evaluated, "n_trained": res.n_trained,
           "no_input_baseline": ev.score(()).to_dict(),
           "training_means_score": ev.baseline().to_dict(),  # the score to beat, as every eevee command prints
           "eevee": summary(pred, actual),
           "own_mean_baseline": summary(own, actual),
           "training_mean_baseline": {"mae": summary(training_mean_prediction(ev, best), actual)["mae"]},
           "random5_meta_model": {key: float(np.mean([r[key] for r in rand])) for key in ("mae", "spearman", "score")},
           "per_model": [{"model": m, "actual": float(a), "predicted": None if np.isnan(p) else float(p),
                          "mean_on_chosen": float(o)}
                         for m, a, p, o in zip(table.models, actual, pred, own)],
           "n_other_tasks": len(other)}
    ev.close()
    return out


def plot_predictions(out: dict, path: str, k: int) -> None:
    """Predicted against actual mean F1 on the other tasks, one panel per meta-model."""
    from matplotlib.figure import Figure

    from modelseek.core.plots import save_figure

    fig = Figure(figsize=(9.0, 4.2))
    for i, (name, res) in enumerate((("MLP (protocol)", out), ("ridge", out["ridge"]))):
        ax = fig.add_subplot(1, 2, i + 1)
        pm = [m for m in res["per_model"] if m["predicted"] is not None]
        a = np.array([m["actual"] for m in pm])
        p = np.array([m["predicted"] for m in pm])
        ax.scatter(a, p, s=18)
        lo, hi = min(a.min(), p.min()), max(a.max(), p.max())
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--")
        ax.set_xlabel("actual mean F1 on the other tasks")
        ax.set_ylabel("predicted (cross-validated)")
        e = res["eevee"]
        ax.set_title(f"{name}: {', '.join(res['best']['benchmarks'])}\nMAE {e['mae']:.4f}, Spearman {e['spearman']:.2f}",
                     fontsize=9)
    fig.suptitle(f"NTCIR-19: each model's mean F1 on the other tasks from its F1 on {k} tasks", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ground-truth", default=str(GT))
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--generations", type=int, default=10)
    ap.add_argument("--out", default="docs/results/eevee_ntcir.json")
    ap.add_argument("--workers", type=int, default=0, help="worker processes (default 0 = one per CPU)")
    ap.add_argument("--plot", default="docs/results/eevee_ntcir.png",
                    help="scatter of predicted against actual mean F1 on the other tasks (PNG)")
    args = ap.parse_args()
    table = Table.from_ground_truth(GroundTruth.from_csv(args.ground_truth))
    out = {"table": repr(table), "k": args.k}
    # the MLP of the protocol (the top-level keys, as before) and the ridge meta-model
    out |= evaluate(table, MetaConfig(seed=0), args.k, args.generations, args.workers)
    out["ridge"] = evaluate(table, MetaConfig(seed=0, model="ridge"), args.k, args.generations, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    if args.plot:
        plot_predictions(out, args.plot, args.k)
    brief = {k: v for k, v in out.items() if k not in ("per_model", "ridge")}
    brief["ridge"] = {k: v for k, v in out["ridge"].items() if k != "per_model"}
    print(json.dumps(brief, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
