"""EEVEE plots (matplotlib, Agg backend, written atomically as PNG)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Mapping, Sequence


def _save(fig, path: str | Path) -> Path:
    from ..io import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)


def _figure(size):
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    return Figure(figsize=size)


def plot_score_vs_k(results: Mapping[int, "object"], path: str | Path, title: str = "") -> Path:
    """Box plot of the top subsets' scores (``SearchResult.top``) for each k."""
    ks = sorted(results)
    data = [[s.mean for s in results[k].top] for k in ks]
    fig = _figure((max(6.0, 0.35 * len(ks) + 2), 4.0))
    ax = fig.add_subplot(111)
    labels = [str(k) for k in ks]
    ax.boxplot(data, **({"labels": labels} if _mpl_old() else {"tick_labels": labels}))
    ax.set_xlabel("k (benchmarks in the subset)")
    ax.set_ylabel(f"CV loss of the top {max(len(d) for d in data)} subsets")
    ax.set_title(title or "EEVEE: score versus k")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def plot_importance(items: Sequence[tuple[str, float]], path: str | Path, title: str = "") -> Path:
    """Bar chart of leave-one-out importance (loss increase when the benchmark is removed)."""
    names = [n for n, _ in items]
    vals = [v for _, v in items]
    fig = _figure((max(5.0, 0.5 * len(names) + 2), 4.0))
    ax = fig.add_subplot(111)
    ax.bar(range(len(names)), vals, color=["tab:blue" if v >= 0 else "tab:red" for v in vals])
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=45, ha="right")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_ylabel("loss increase when removed")
    ax.set_title(title or "EEVEE: leave-one-out importance")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def _mpl_old() -> bool:
    import matplotlib

    major, minor = (int(x) for x in matplotlib.__version__.split(".")[:2])
    return (major, minor) < (3, 9)
