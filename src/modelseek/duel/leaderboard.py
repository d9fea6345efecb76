"""The leaderboard as a table (pandas), shared by the CLI, the storage and the web app."""

from __future__ import annotations

import pandas as pd

from .config import LeaderboardConfig


def leaderboard_frame(scores: dict, raw: dict, config: LeaderboardConfig, level: str = "overall") -> pd.DataFrame:
    """One row per model sorted by overall win score (ties by name).

    ``level``: 'overall' (overall + category scores), 'tasks' (also every task's win score and raw value),
    or a category name (that category's score, its tasks' win scores and raw values).
    """
    if level not in ("overall", "tasks") and level not in config.categories:
        from ..errors import InputError

        raise InputError(f"unknown level {level!r}; valid: overall, tasks, {', '.join(config.categories)}")
    rows = []
    for model, sc in scores.items():
        row = {"model": model, "overall": round(sc["overall"], 2)}
        if level in ("overall", "tasks"):
            row.update({c: round(sc[c], 2) for c in config.categories})
        else:
            row[level] = round(sc[level], 2)
        tasks = config.task_ids if level == "tasks" else (config.tasks_of(level) if level != "overall" else [])
        for t in tasks:
            row[t] = round(sc[t], 2)
            if model in raw and t in raw[model]:
                row[f"{t} ({config.spec(t).metric.value})"] = round(raw[model][t], 4)
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=["rank", "model", "overall"])
    df = df.sort_values(["overall", "model"], ascending=[False, True], kind="stable").reset_index(drop=True)
    df.insert(0, "rank", range(1, len(df) + 1))
    return df
