"""Learning curves of a grid: validation loss per epoch for every finished job, best epoch marked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...core.plots import _figure, save_figure
from .store import JobRecord


def plot_learning_curves(records: Sequence[JobRecord], path: str | Path, max_tasks: int = 12) -> Path:
    """One panel per task (at most ``max_tasks``), one line per (model, seed): validation loss by epoch,
    a dot at the restored best epoch. Failed jobs are left out."""
    done = [r for r in records if r.status == "done" and r.result and r.result.get("history")]
    if not done:
        raise ValueError("no finished jobs with a history to plot")
    tasks = list(dict.fromkeys(r.task_id for r in done))[:max_tasks]
    plt = _figure()
    cols = min(3, len(tasks))
    rows = (len(tasks) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, task in zip(axes.flat, tasks):
        for r in (r for r in done if r.task_id == task):
            result = r.result or {}  # `done` holds only records with a result
            hist = result["history"]
            epochs = [h["epoch"] for h in hist]
            losses = [h["val_loss"] for h in hist]
            (line,) = ax.plot(epochs, losses, lw=1.2, label=f"{r.model_id} (seed {r.seed}, F1 {r.f1:.3f})")
            best = result.get("best_epoch") or 0
            if 1 <= best <= len(losses):
                ax.plot([best], [losses[best - 1]], "o", color=line.get_color(), ms=4)
        ax.set_title(f"task {task}", fontsize=9)
        ax.set_xlabel("epoch", fontsize=8)
        ax.set_ylabel("validation loss", fontsize=8)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    fig.tight_layout()
    out = save_figure(fig, path)
    plt.close(fig)
    return out
