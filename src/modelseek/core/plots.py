"""Plots people would rather look at than read (matplotlib, Agg backend; written atomically as PNG)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from .io import atomic_write_bytes


def _figure():
    import matplotlib  # lazy: matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt  # lazy: matplotlib

    return plt


def save_figure(fig, path: str | Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)


def plot_tier_intervals(summaries: Mapping[str, pd.DataFrame], metric: str, path: str | Path,
                        title: str = "") -> Path:
    """Grouped bars: one group per criticality tier, one bar per method, bootstrap interval as error bar.

    ``summaries`` maps method -> the frame of :meth:`Report.intervals` (columns metric, tier, mean, low, high).
    """
    plt = _figure()
    tiers = ["low", "medium", "high", "all"]
    methods = list(summaries)
    width = 0.8 / max(1, len(methods))
    fig, ax = plt.subplots(figsize=(1.6 + 1.8 * len(tiers), 3.6))
    for i, m in enumerate(methods):
        df = summaries[m]
        df = df[df["metric"] == metric].set_index("tier")
        xs, ys, lo, hi = [], [], [], []
        for j, t in enumerate(tiers):
            if t in df.index:
                r = df.loc[t]
                xs.append(j + (i - (len(methods) - 1) / 2) * width)
                ys.append(r["mean"])
                lo.append(r["mean"] - r["low"])
                hi.append(r["high"] - r["mean"])
        ax.bar(xs, ys, width=width * 0.95, yerr=[lo, hi], capsize=3, label=m)
    ax.set_xticks(range(len(tiers)), tiers)
    ax.set_ylabel(metric)
    ax.set_ylim(0, 1)
    ax.set_title(title or f"{metric} by criticality tier (95% bootstrap interval)")
    ax.legend(frameon=False, ncols=min(7, len(methods)), loc="upper center", bbox_to_anchor=(0.5, -0.08))
    ax.grid(axis="y", alpha=0.3)
    out = save_figure(fig, path)
    plt.close(fig)
    return out
