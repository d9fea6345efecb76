"""The leaderboard as a table (pandas), shared by the CLI, the storage and the web app."""

from __future__ import annotations

import pandas as pd

from ..core.errors import InputError
from .config import LeaderboardConfig
from .scoring import ranks


def leaderboard_frame(scores: dict, raw: dict, config: LeaderboardConfig, level: str = "overall") -> pd.DataFrame:
    """One row per model sorted by overall win score (by that category's score in a category's view); equal
    scores share a rank (listed by name, never ranked by it).

    ``level``: 'overall' (overall + category scores), 'tasks' (also every task's win score and raw value),
    or a category name (that category's score, its tasks' win scores and raw values).
    """
    if level not in ("overall", "tasks") and level not in config.categories:
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
    by = "overall" if level in ("overall", "tasks") else level
    copy_of = getattr(scores, "copy_of", {})            # a family's copies (:class:`.scoring.Scores`) take no rank
    exact = df["model"].map(lambda m: scores[m][by])
    df = df.assign(_exact=exact, _copy=df["model"].map(lambda m: m in copy_of))
    df = df.sort_values(["_exact", "_copy", "model"], ascending=[False, True, True], kind="stable")
    df = df.drop(columns=["_exact", "_copy"]).reset_index(drop=True)
    df.insert(0, "rank", ranks([scores[m][by] for m in df["model"]], [m not in copy_of for m in df["model"]]))
    if copy_of:
        df.attrs["copy_of"] = dict(copy_of)
    return df


def altered_frame(message: str) -> pd.DataFrame:
    """What the page and its CSV/JSON downloads show in place of an altered board (:class:`.storage.BoardAltered`):
    one row, the warning."""
    return pd.DataFrame({"warning": [str(message)]})


#: the columns the app adds beside the model (Hugging Face leaderboards show them): header, hover title
INFO_COLUMNS = {"type": ("Type", "model type, as uploaded (pretrained, fine-tuned, chat, ...)"),
                "params": ("Params", "number of parameters, as uploaded"),
                "precision": ("Precision", "weights' precision during evaluation, as uploaded"),
                "link": ("Link", "the model's page, as uploaded"),
                "reviewed": ("Reviewed", "approved by the operator (who, when) before publication")}


#: a spreadsheet reads a cell starting with one of these as a formula (``=HYPERLINK(...)``, ``@SUM(...)``)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def formula_safe(value):
    """A cell a spreadsheet shows as text: a string starting with ``= + - @`` (or a tab or carriage return) gets a
    leading apostrophe (OWASP's CSV-injection advice); numbers and other values unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def export_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The board as downloaded: every text cell and header :func:`formula_safe`."""
    out = df.copy()
    out.columns = [formula_safe(str(c)) for c in out.columns]
    for col in out.columns:
        if not pd.api.types.is_numeric_dtype(out[col]):
            out[col] = out[col].map(formula_safe)
    return out


def board_csv(df: pd.DataFrame) -> str:
    """The board as CSV (UTF-8, formula-safe)."""
    return export_frame(df).to_csv(index=False)


def board_json(df: pd.DataFrame) -> str:
    """The board as JSON records (formula-safe like the CSV: one file may be opened by a spreadsheet too)."""
    return export_frame(df).to_json(orient="records", force_ascii=False, indent=1)


def _initials(name: str) -> str:
    words = [w for w in name.replace("-", " ").split() if w]
    return name if len(words) < 2 or len(name) <= 12 else "".join(w[0].upper() for w in words)


def display_frame(df: pd.DataFrame | None, config: LeaderboardConfig, highlight: str | None = None):
    """The leaderboard as the web app shows it: short headers (``#``, ``Model``, ``Overall``, category
    initials, BenCzechMark's task abbreviations; the full names in ``.modelseek_titles`` for hovering) and
    one number format (win scores ``62.40``, metric values ``0.6240``), as a pandas Styler over the numbers
    (sorting stays numeric). ``None`` stays ``None``."""
    if df is None:
        return None
    titles: dict[str, str] = {}
    rename: dict[str, str] = {}
    used: set[str] = set()

    def short(col: str, s: str, full: str) -> None:
        base, k = s, 2
        while s in used:
            s, k = f"{base}{k}", k + 1
        used.add(s)
        rename[col] = s
        titles[s] = full

    specs = {t.task: t for t in config.tasks}
    metric_cols: list[str] = []
    for col in df.columns:
        col = str(col)
        if col == "rank":
            short(col, "#", "rank (by overall win score)")
        elif col == "model":
            short(col, "Model", "model")
        elif col == "overall":
            short(col, "Overall", "overall win score (mean of the categories)")
        elif col in INFO_COLUMNS and col not in specs and col not in config.categories:
            short(col, *INFO_COLUMNS[col])
        elif col in config.categories:
            short(col, _initials(col), f"{col}: category win score (mean of its tasks)")
        elif col in specs:
            sp = specs[col]
            short(col, sp.abbreviation or col, f"{sp.name or col} ({col}): task win score")
        elif col.endswith(")") and " (" in col and col.rsplit(" (", 1)[0] in specs:
            task, metric = col[:-1].rsplit(" (", 1)
            sp = specs[task]
            short(col, f"{sp.abbreviation or task} {metric}", f"{sp.name or task}: {metric} computed from the "
                                                              "predictions")
            metric_cols.append(rename[col])
        else:
            short(col, col, col)
    shown = df.rename(columns=rename)
    numeric = [c for c in shown.columns if c not in ("#", "Model") and pd.api.types.is_numeric_dtype(shown[c])]
    fmt = {c: ("{:.4f}" if c in metric_cols else "{:.2f}") for c in numeric}
    styler = shown.style.format(fmt, na_rep="—").hide(axis="index")
    if highlight is not None and "Model" in shown.columns:      # the preview's new row
        marked = shown["Model"].map(lambda m: str(m) == highlight)
        styler = styler.apply(lambda row: ["background-color: #fff3bf; font-weight: bold" if marked[row.name]
                                           else "" for _ in row], axis=1)
    styler.modelseek_titles = titles
    return styler
