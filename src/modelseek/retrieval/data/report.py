"""Reports: per-topic metric values, broken down by criticality tier.

A report always keeps the per-topic vectors (duels and bootstrap intervals need them) and prints as a
table; it exports to CSV, JSON and Markdown.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...core.io import atomic_write_text
from ..metrics import trec_name
from .run import natural_key

if TYPE_CHECKING:  # pandas is imported where it is used: `import modelseek` stays light
    import pandas as pd

from ...core.stats.bootstrap import bootstrap_ci

TIER_ORDER = ["low", "medium", "high", "all"]


def _nanmean(values: np.ndarray) -> float:
    """Mean with NaN left out (NaN when nothing is left), summed as pandas' ``Series.mean`` sums (NaN as 0, one
    pairwise sum): the same value to the last bit as the report's table gives."""
    nan = np.isnan(values)
    n = values.size - int(nan.sum())
    return float(np.where(nan, 0.0, values).sum() / n) if n else float("nan")


def _some(items: Sequence[str], n: int = 10) -> str:
    shown = ", ".join(repr(x) if any(not c.isprintable() or c.isspace() for c in x) else x for x in items[:n])
    return shown + (" ..." if len(items) > n else "")


class Report:
    """Per-topic scores of one run. ``per_topic`` has one row per topic: ``tier`` and one column per metric."""

    def __init__(self, per_topic: pd.DataFrame, metrics: Sequence[str], run_id: str = "run",
                 missing_topics: Sequence[str] = (), extra_topics: Sequence[str] = (),
                 scheme: str = "ntcir", unknown_models: Sequence[str] = (), order: str = "rank",
                 relevance_level: int = 1, tier_source: str = "") -> None:
        self._frame: pd.DataFrame | None = per_topic.copy()
        self._cols: tuple[list[str], list[str], dict[str, np.ndarray]] | None = None
        self._meta(metrics, run_id, missing_topics, extra_topics, scheme, unknown_models, order, relevance_level,
                   tier_source)

    def _meta(self, metrics: Sequence[str], run_id: str = "run", missing_topics: Sequence[str] = (),
              extra_topics: Sequence[str] = (), scheme: str = "ntcir", unknown_models: Sequence[str] = (),
              order: str = "rank", relevance_level: int = 1, tier_source: str = "") -> None:
        self.metrics = list(metrics)
        self.run_id = run_id
        self.missing_topics = list(missing_topics)
        self.extra_topics = list(extra_topics)
        self.scheme = scheme
        self.unknown_models = list(unknown_models)  # docIDs of the run that no ground-truth row names
        self.order = order
        self.relevance_level = int(relevance_level)
        self.tier_source = tier_source  # where the tiers come from: a tasks.csv, a criticality column, the regret rule

    @classmethod
    def from_columns(cls, topics: Sequence[str], tiers: Sequence[str], columns: dict[str, np.ndarray],
                     metrics: Sequence[str], **kwargs) -> Report:
        """A report from its per-topic columns (one float array per metric, in ``topics`` order), keyword
        arguments as for the constructor. The ``per_topic`` table is built on first use: ``evaluate --trec``
        prints means from the arrays and never imports pandas (about 50 MB and 0.2 s)."""
        report = cls.__new__(cls)
        report._frame = None  # the columns stand for it until per_topic is asked for
        report._cols = (list(topics), list(tiers), {m: np.asarray(columns[m], dtype=float) for m in metrics})
        report._meta(metrics, **kwargs)
        return report

    @property
    def _per_topic(self) -> pd.DataFrame:
        if self._frame is None:
            import pandas as pd  # lazy: pandas

            topics, tiers, cols = self._cols  # type: ignore[misc]  # one of the two is always set
            self._frame = pd.DataFrame({"tier": tiers, **cols}, index=pd.Index(topics, name="topic"))
        return self._frame

    @property
    def per_topic(self) -> pd.DataFrame:
        return self._per_topic.copy()

    @property
    def topics(self) -> list[str]:
        return list(self._cols[0]) if self._cols is not None else list(self._per_topic.index)

    def mean(self) -> dict[str, float]:
        if self._cols is not None:  # NaN left out, as pandas' mean does
            return {m: _nanmean(self._cols[2][m]) for m in self.metrics}
        return {m: float(self._per_topic[m].mean()) for m in self.metrics}

    def by_tier(self) -> pd.DataFrame:
        """Mean per tier (rows low, medium, high, all) with the topic count ``n``."""
        import pandas as pd  # lazy: pandas

        return pd.DataFrame.from_dict(self._tier_means(), orient="index")[["n", *self.metrics]]

    def _tier_means(self) -> dict[str, dict[str, float]]:
        """Tier -> {"n": topics, metric: mean} for the tiers that have topics, in :data:`TIER_ORDER`."""
        rows = {}
        if self._cols is not None:  # from the arrays: the table and Markdown outputs need no pandas
            tiers = np.asarray(self._cols[1], dtype=object)
            for tier in TIER_ORDER:
                sel = np.ones(tiers.size, dtype=bool) if tier == "all" else tiers == tier
                if sel.any():
                    rows[tier] = {"n": int(sel.sum()), **{m: _nanmean(self._cols[2][m][sel]) for m in self.metrics}}
            return rows
        for tier in TIER_ORDER:
            sub = self._per_topic if tier == "all" else self._per_topic[self._per_topic["tier"] == tier]
            if not sub.empty:
                rows[tier] = {"n": len(sub), **{m: float(sub[m].mean()) for m in self.metrics}}
        return rows

    def intervals(self, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
        """Bootstrap interval (over topics) of every metric per tier: columns ``metric``, ``tier``, mean, low, high."""
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
        import pandas as pd  # lazy: pandas
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------------------------------ output
    def table(self, digits: int = 4) -> str:
        header = ["tier", "n", *self.metrics]
        rows = [[t, str(int(r["n"])), *(f"{r[m]:.{digits}f}" for m in self.metrics)]
                for t, r in self._tier_means().items()]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

        def fmt(cells):
            return "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        lines = [f"run {self.run_id} ({len(self.topics)} topics, grading {self.scheme})"
                 + (f"; tiers from {self.tier_source}" if self.tier_source else ""), fmt(header),
                 fmt(["-" * w for w in widths])]
        lines += [fmt(r) for r in rows]
        lines += [f"note: {n}" for n in self.notes()]
        return "\n".join(lines)

    def notes(self) -> list[str]:
        """What the numbers do not show: topics missing from the run, run topics and docIDs the ground truth
        does not know (printed by every output mode of ``evaluate``; ``--strict`` makes the last two errors)."""
        out = []
        if self.missing_topics:
            out.append(f"{len(self.missing_topics)} topic(s) of the ground truth missing from the run scored 0: "
                       f"{_some(self.missing_topics)}")
        if self.extra_topics:
            out.append(f"{len(self.extra_topics)} topic(s) of the run not in the ground truth were ignored: "
                       f"{_some(self.extra_topics)}")
        if self.unknown_models:
            out.append(f"{len(self.unknown_models)} docID(s) of the run not in the ground truth count as "
                       f"non-relevant: {_some(self.unknown_models)}")
        return out

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
            "unknown_models": self.unknown_models,
            "order": self.order,
            "relevance_level": self.relevance_level,
            "tier_source": self.tier_source,
            "notes": self.notes(),
        }

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            atomic_write_text(path, text + "\n")
        return text

    def to_csv(self, path: str | Path | None = None, per_topic: bool = False) -> str:
        df = self._per_topic if per_topic else self.by_tier()
        text = df.to_csv(index_label="topic" if per_topic else "tier")
        if path is not None:
            atomic_write_text(path, text)
        return text

    def to_markdown(self, digits: int = 4) -> str:
        head = "| tier | n | " + " | ".join(self.metrics) + " |"
        sep = "|---|---:|" + "---:|" * len(self.metrics)
        body = [f"| {t} | {int(r['n'])} | " + " | ".join(f"{r[m]:.{digits}f}" for m in self.metrics) + " |"
                for t, r in self._tier_means().items()]
        return "\n".join([head, sep, *body])

    def to_trec(self, per_topic: bool = False, digits: int = 4) -> str:
        """trec_eval's ``-q`` layout: ``measure<TAB>topic<TAB>value`` with trec_eval's measure names
        (``ndcg_cut_5``, ``recip_rank``), one ``all`` line per measure (the mean), per-topic lines first when
        ``per_topic``. Measure names are padded to 22 characters as trec_eval does; a NaN topic is left out."""
        out = []
        names = {m: trec_name(m) for m in self.metrics}
        if per_topic:  # topic by topic, as trec_eval -q prints them
            values = (np.column_stack([self._cols[2][m] for m in self.metrics]) if self._cols is not None
                      else self._per_topic[self.metrics].to_numpy(dtype=float))
            for t, row in zip(self.topics, values):
                out += [f"{names[m]:<22}\t{t}\t{v:.{digits}f}" for m, v in zip(self.metrics, row) if not np.isnan(v)]
        means = self.mean()
        for m in self.metrics:
            out.append(f"{names[m]:<22}\tall\t{means[m]:.{digits}f}")
        return "\n".join(out) + "\n"

    def __repr__(self) -> str:
        return f"Report({self.run_id!r}, {len(self.topics)} topics, {self.mean()})"
