"""How the leaderboard page writes what it shows: Markdown-safe text, numbers and p-values for people, the
provenance table, and frames whose every cell can be encoded and rendered (a stored row never stops a page)."""

from __future__ import annotations

import contextlib
import math
import re
import time

import pandas as pd

from .text import safe_str

_PUNCT = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~&\"'$%=:;,/?@^])")


def md_text(text: object) -> str:
    """``text`` (any value, shown by :func:`~.text.safe_str`) as literal Markdown text: every ASCII punctuation
    character backslash-escaped (CommonMark allows it for all of them), so no user string can open a code span,
    a link, emphasis or HTML."""
    return _PUNCT.sub(r"\\\1", safe_str(text)).replace("\n", " ")


def md_code(text: str) -> str:
    """``text`` in a Markdown code span that it cannot close: the fence is one backtick longer than the
    longest run of backticks inside (CommonMark code spans), padded when the text starts or ends with one."""
    text = safe_str(text).replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def params_text(n) -> str | None:
    """A parameter count as leaderboards show it: ``7.2B``, ``350M``."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n <= 0:
        return None
    return f"{n / 1e9:.1f}B" if n >= 1e9 else (f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n:,.0f}")


def _when(value) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(value)))


def provenance_table(meta: dict | None) -> pd.DataFrame | None:
    """A model's details and provenance as a two-column table for people, the fields leaderboards show
    first: dates (``date``, epoch times) in UTC, durations in seconds and minutes, lm-evaluation-harness's
    process-clock ``start_time`` / ``end_time`` said to be one, nested values as compact JSON."""
    import json

    if meta is None:
        return None
    first = ("model", "type", "n_params", "precision", "source", "team", "_published", "date", "_sha256")
    rows = []
    for key in [k for k in first if k in meta] + [k for k in meta if k not in first]:
        v, k = meta[key], safe_str(key)
        if isinstance(v, str) and (k == "date" or k.endswith(("_time", "_seconds"))):
            with contextlib.suppress(ValueError):
                v = float(v)                   # lm-evaluation-harness writes some numbers as strings
        number = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if number and (k == "date" or (k.endswith("_time") and v > 1e9)):
            text = _when(v)
        elif number and k.endswith("_time"):
            text = f"{v:.1f} s on the evaluation's process clock"
        elif number and k.endswith("_seconds"):
            text = f"{v:,.0f} s ({v / 60:.1f} min)"
        elif number and k == "n_params":
            text = params_text(v) or safe_str(v)
        elif isinstance(v, (dict, list)):
            dumped = json.dumps(safe_tree(v), ensure_ascii=False, sort_keys=True)
            text = dumped if len(dumped) <= 300 else dumped[:299] + "…"
        else:
            text = safe_str(v)
        rows.append({"field": k.lstrip("_"), "value": text})
    return pd.DataFrame(rows, columns=["field", "value"])


def pvalue_text(p) -> str:
    """A p-value for people: ``< 1e-16`` where double precision cannot tell it from 0, else 3 significant
    digits."""
    try:
        p = float(p)
    except (TypeError, ValueError):
        return safe_str(p)
    if math.isnan(p):
        return "—"
    return "< 1e-16" if p < 1e-16 else f"{p:.3g}"


def cell(value) -> str | float | int:
    """One stored value as the page shows it (never raises): numbers stay numbers, text is encodable."""
    if isinstance(value, bool) or value is None:
        return safe_str(value)
    if isinstance(value, (int, float)):
        return value
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return value.item()
    except ImportError:  # pragma: no cover
        pass
    return safe_str(value)


def safe_tree(obj):
    """A JSON value whose strings (keys too) can always be encoded."""
    if isinstance(obj, dict):
        return {safe_str(k): safe_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [safe_tree(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return safe_str(obj)
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    return safe_str(obj)


def _href(url) -> str | None:
    """A link target that cannot leave a Markdown link: an http(s) URL with ``( ) < >`` and spaces escaped."""
    text = safe_str(url)
    if not re.match(r"^https?://\S+$", text):
        return None
    for ch, esc in (("(", "%28"), (")", "%29"), ("<", "%3C"), (">", "%3E")):
        text = text.replace(ch, esc)
    return text


def linked_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its ``model`` and ``link`` columns as Markdown: a model name links to its page (the uploaded
    ``source``), the text escaped (:func:`md_text`) so that no name can make another link or markup."""
    if "model" not in df.columns or "link" not in df.columns or not len(df):
        return df
    out = df.copy()
    hrefs = [_href(u) if isinstance(u, str) else None for u in out["link"]]
    out["model"] = [f"[{md_text(m)}]({h})" if h else md_text(m) for m, h in zip(out["model"], hrefs)]
    out["link"] = [f"[{md_text(u)}]({h})" if h else "—" for u, h in zip(out["link"], hrefs)]
    return out


def datatypes(frame) -> list[str]:
    """Gradio's per-column types of a shown frame: Markdown for the model and its link, numbers, text."""
    data = getattr(frame, "data", frame)
    if data is None:
        return []
    return ["markdown" if c in ("Model", "Link") else ("number" if pd.api.types.is_numeric_dtype(data[c]) else "str")
            for c in data.columns]


def safe_frame(df: pd.DataFrame | None) -> pd.DataFrame | None:
    """Every cell through :func:`cell`, every header through :func:`safe_str`."""
    if df is None:
        return None
    out = df.copy()
    out.columns = [safe_str(c) for c in out.columns]
    for col in out.columns:
        if out[col].dtype == object:
            out[col] = out[col].map(cell)
    return out
