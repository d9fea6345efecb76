"""EEVEE plots (matplotlib, Agg backend, written atomically as PNG)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.io import atomic_write_bytes

if TYPE_CHECKING:
    from .search import SearchResult


def _save(fig, path: str | Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)


def _figure(size):
    from matplotlib.figure import Figure  # lazy: matplotlib; no pyplot: no global state, no GUI backend

    return Figure(figsize=size)


def plot_score_vs_k(results: Mapping[int, SearchResult], path: str | Path, title: str = "") -> Path:
    """Box plot of the top subsets' scores (``SearchResult.top``) for each k, with the best subset of each k
    as a line; a logarithmic y axis when the scores span more than a factor of 3 (e.g. k = 1 of a large
    table, whose "top" holds every single benchmark)."""
    ks = sorted(results)
    data = [[s.mean for s in results[k].top] for k in ks]
    fig = _figure((max(6.0, 0.35 * len(ks) + 2), 4.0))
    ax = fig.add_subplot(111)
    labels = [str(k) for k in ks]
    ax.boxplot(data, **({"labels": labels} if _mpl_old() else {"tick_labels": labels}))
    best = [min(d) for d in data]
    ax.plot(range(1, len(ks) + 1), best, color="tab:green", marker=".", lw=1, label="best subset")
    lo, hi = min(best), max(max(d) for d in data)
    if lo > 0 and hi / lo > 3:
        from matplotlib.ticker import FormatStrFormatter, LogLocator  # lazy: matplotlib

        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FormatStrFormatter("%.2g"))  # 0.5, 2 rather than 5x10^-1, 2x10^0
        ax.yaxis.set_minor_formatter(FormatStrFormatter("%.2g"))
        if hi / lo > 10:  # label only 2 and 5 of each decade, so labels do not overlap
            ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    ax.legend(loc="upper right")
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
    import matplotlib  # lazy: matplotlib

    major, minor = (int(x) for x in matplotlib.__version__.split(".")[:2])
    return (major, minor) < (3, 9)
