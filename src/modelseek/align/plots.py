"""Plots of the alignment part (matplotlib's object API: no pyplot, no global backend change): a solver's
score trajectory and a CKA matrix."""

from __future__ import annotations

from ..core.plots import save_figure
from .formats import Team
from .solvers import SolverResult


def plot_trajectory(result: SolverResult, path) -> None:
    """Write a PNG of the score trajectory, with the same-run baselines as horizontal lines."""
    from matplotlib.figure import Figure  # lazy: matplotlib; the object API: no pyplot, no global backend change

    fig = Figure(figsize=(7, 4), dpi=110)
    ax = fig.add_subplot(111)
    phases = []
    for rec in result.trajectory:
        if rec["phase"] not in phases:
            phases.append(rec["phase"])
    for ph in phases:
        pts = [(r["step"], r["score"]) for r in result.trajectory if r["phase"] == ph]
        ax.plot(*zip(*pts), marker="." if len(pts) < 50 else None, lw=1.2, label=ph)
    best = [(r["step"], r["best"]) for r in result.trajectory if r.get("best") is not None]
    if best:
        ax.plot(*zip(*best), color="black", lw=0.8, ls="--", label="best so far")
    for i, (name, v) in enumerate(result.baselines.items()):
        ax.axhline(v, color=f"C{(i + len(phases)) % 10}", lw=0.8, ls=":", label=f"{name} = {v:.4f}")
    ax.set_xlabel("step")
    ax.set_ylabel("Red score (1 - mean CKA)" if result.team is Team.RED else "Blue score (mean CKA)")
    ax.set_title(f"{result.team.value} team: final score {result.score:.4f}")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    save_figure(fig, path)


def cka_heatmap(C, names, path) -> None:
    """Write a PNG of a models x models CKA matrix (0 to 1, viridis), the names on both axes."""
    from matplotlib.figure import Figure  # lazy: matplotlib; the object API: no pyplot, no global backend change

    k = len(names)
    fig = Figure(figsize=(2 + 0.35 * k, 1.5 + 0.35 * k), dpi=110)
    ax = fig.add_subplot(111)
    im = ax.imshow(C, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(k), names, rotation=90, fontsize=7)
    ax.set_yticks(range(k), names, fontsize=7)
    fig.colorbar(im, ax=ax, label="linear CKA")
    fig.tight_layout()
    save_figure(fig, path)
