"""Reports: per-topic metric values, broken down by criticality tier.

A report always keeps the per-topic vectors (duels and bootstrap intervals need them) and prints as a
table; it exports to CSV, JSON and Markdown.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence, TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported where it is used: `import modelseek` stays light
    import pandas as pd

from ..stats.bootstrap import bootstrap_ci

TIER_ORDER = ["low", "medium", "high", "all"]


class Report:
    """Per-topic scores of one run. ``per_topic`` has one row per topic: ``tier`` and one column per metric."""

    def __init__(self, per_topic: pd.DataFrame, metrics: Sequence[str], run_id: str = "run",
                 missing_topics: Sequence[str] = (), extra_topics: Sequence[str] = (),
                 scheme: str = "ntcir") -> None:
        self._per_topic = per_topic.copy()
        self.metrics = list(metrics)
        self.run_id = run_id
        self.missing_topics = list(missing_topics)
        self.extra_topics = list(extra_topics)
        self.scheme = scheme

    @property
    def per_topic(self) -> pd.DataFrame:
        return self._per_topic.copy()

    @property
    def topics(self) -> list[str]:
        return list(self._per_topic.index)

    def mean(self) -> dict[str, float]:
        return {m: float(self._per_topic[m].mean()) for m in self.metrics}

    def by_tier(self) -> pd.DataFrame:
        """Mean per tier (rows low, medium, high, all) with the topic count ``n``."""
        rows = {}
        for tier in TIER_ORDER:
            sub = self._per_topic if tier == "all" else self._per_topic[self._per_topic["tier"] == tier]
            if sub.empty:
                continue
            row = {m: float(sub[m].mean()) for m in self.metrics}
            row["n"] = int(len(sub))
            rows[tier] = row
        import pandas as pd
        return pd.DataFrame.from_dict(rows, orient="index")[["n", *self.metrics]]

    def intervals(self, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
        """Bootstrap interval (over topics) of every metric per tier: columns ``metric``, ``tier``, mean, low, high."""
        from .run import natural_key

        rows = []
        # topics in their natural order: the resamples depend on which topics there are, not on the files' order
        pt = self._per_topic.loc[sorted(self._per_topic.index, key=lambda t: natural_key(str(t)))]
        for tier in TIER_ORDER:
            sub = pt if tier == "all" else pt[pt["tier"] == tier]
            if sub.empty:
                continue
            for m in self.metrics:
                vals = sub[m].to_numpy(dtype=float)
                vals = vals[np.isfinite(vals)]
                if vals.size == 0:
                    continue
                ci = bootstrap_ci(vals, n_resamples, confidence, seed)
                rows.append({"metric": m, "tier": tier, "mean": ci.mean, "low": ci.low, "high": ci.high,
                             "n": int(vals.size)})
        import pandas as pd
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------------------------------ output
    def table(self, digits: int = 4) -> str:
        df = self.by_tier()
        header = ["tier", "n", *self.metrics]
        rows = [[t, str(int(r["n"])), *(f"{r[m]:.{digits}f}" for m in self.metrics)] for t, r in df.iterrows()]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        fmt = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
        lines = [f"run {self.run_id} ({len(self.topics)} topics, grading {self.scheme})", fmt(header),
                 fmt(["-" * w for w in widths])]
        lines += [fmt(r) for r in rows]
        if self.missing_topics:
            lines.append(f"note: {len(self.missing_topics)} topic(s) of the ground truth missing from the run "
                         f"scored 0: {', '.join(self.missing_topics[:10])}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def to_dict(self) -> dict:
        def num(v):  # NaN (e.g. kendall on a topic missing from the run) is JSON null
            v = float(v)
            return None if np.isnan(v) else v

        return {
            "run_id": self.run_id,
            "scheme": self.scheme,
            "metrics": self.metrics,
            "mean": {k: num(v) for k, v in self.mean().items()},
            "by_tier": {t: {k: (int(v) if k == "n" else num(v)) for k, v in r.items()}
                        for t, r in self.by_tier().iterrows()},
            "per_topic": {t: {k: (v if isinstance(v, str) else num(v)) for k, v in r.items()}
                          for t, r in self._per_topic.iterrows()},
            "missing_topics": self.missing_topics,
            "extra_topics": self.extra_topics,
        }

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            from ..io import atomic_write_text

            atomic_write_text(path, text + "\n")
        return text

    def to_csv(self, path: str | Path | None = None, per_topic: bool = False) -> str:
        df = self._per_topic if per_topic else self.by_tier()
        text = df.to_csv(index_label="topic" if per_topic else "tier")
        if path is not None:
            from ..io import atomic_write_text

            atomic_write_text(path, text)
        return text

    def to_markdown(self, digits: int = 4) -> str:
        df = self.by_tier()
        head = "| tier | n | " + " | ".join(self.metrics) + " |"
        sep = "|---|---:|" + "---:|" * len(self.metrics)
        body = [f"| {t} | {int(r['n'])} | " + " | ".join(f"{r[m]:.{digits}f}" for m in self.metrics) + " |"
                for t, r in df.iterrows()]
        return "\n".join([head, sep, *body])

    def __repr__(self) -> str:
        return f"Report({self.run_id!r}, {len(self.topics)} topics, {self.mean()})"
