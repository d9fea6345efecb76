"""The EEVEE input: a models x metric-columns table, with benchmarks, task groups, weights and costs.

A *column* is one metric of one benchmark (``cifar100.acc@1``); a *benchmark* owns one or more columns and
is the unit that EEVEE chooses. Every column belongs to one task *group*; groups carry weights. Readers:

* :meth:`Table.from_gate_csv` — the GATE layout: row 1 ``Model,<benchmark>,...``, row 2 ``Metric,<metric>,...``,
  then one row per model (empty cell = missing);
* :meth:`Table.from_tidy_csv` — one ``model,benchmark,metric,value`` row per cell;
* :meth:`Table.from_wide_csv` — the common shape: one row per model, a model-name column, one column per
  benchmark (or ``benchmark.metric``);
* :meth:`Table.from_ground_truth` — a model-retrieval :class:`~modelseek.retrieval.data.truth.GroundTruth` (rows =
  models, benchmarks = tasks, one ``f1`` column each);
* :meth:`Table.read` picks the CSV layout from the header.

Lower-is-better columns (``loss``, ``dice-loss``, ``mae``... see :data:`LOWER_IS_BETTER`) are negated by
:meth:`Table.oriented` so that every column reads "higher is better"; the meta-model works on z-scores, so
this changes nothing in its loss, but predictions and summaries read the same way for every column.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..core.config import coerce
from ..core.errors import InputError
from ..core.io import long_csv_fields, open_text, read_yaml_located

log = logging.getLogger(__name__)

#: Metric names that are better when lower (matched case-insensitively on the metric name).
LOWER_IS_BETTER = frozenset({"loss", "dice-loss", "mae", "mse", "rmse", "error", "err", "perplexity",
                             "word_perplexity", "wer", "cer"})

_MISSING = {"", "na", "nan", "n/a", "none", "null", "-"}
_MODEL_COLUMNS = {"model", "name", "model_name", "model_id"}


def shown(name: str) -> str:
    """A name from a file as it may appear in a one-line message (quoted when it holds control characters)."""
    return name if name.isprintable() else repr(name)


def _cell(text: str, path, line: int, field_name: str) -> float:
    s = (text or "").strip()
    if s.lower() in _MISSING:
        return math.nan
    try:
        v = float(s)
    except ValueError:
        raise InputError(f"not a number: {s!r}", path=path, line=line, field=shown(field_name)) from None
    if not math.isfinite(v):
        raise InputError(f"not a finite number: {s!r}", path=path, line=line, field=shown(field_name))
    return v


@dataclass(frozen=True)
class Table:
    """Models x metric columns. ``values[i, j]`` is model i's raw value of column j (NaN = missing)."""

    values: np.ndarray
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]            # benchmark of each column
    metrics: tuple[str, ...]               # metric name of each column
    lower_is_better: tuple[bool, ...]
    groups: tuple[str, ...] = ()           # task group of each column ("" = not given: one group per benchmark)
    group_weights: Mapping[str, float] = field(default_factory=dict)
    costs: Mapping[str, float] = field(default_factory=dict)  # benchmark -> cost (e.g. GPU hours)
    source: str = ""

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=float)
        object.__setattr__(self, "values", v)
        v.setflags(write=False)
        n, m = v.shape if v.ndim == 2 else (0, 0)
        if v.ndim != 2:
            raise InputError("the table must be 2-dimensional (models x metric columns)", path=self.source or None)
        for name, seq in (("models", self.models), ("benchmarks", self.benchmarks), ("metrics", self.metrics),
                          ("lower_is_better", self.lower_is_better)):
            want = n if name == "models" else m
            if len(seq) != want:
                raise InputError(f"{name} has {len(seq)} entries for {want}", path=self.source or None)
        if not self.groups:
            object.__setattr__(self, "groups", tuple(self.benchmarks))
        elif len(self.groups) != m:
            raise InputError(f"groups has {len(self.groups)} entries for {m} columns", path=self.source or None)
        if len(set(self.models)) != n:
            dup = next(x for x in self.models if self.models.count(x) > 1)
            raise InputError(f"duplicate model {dup!r}", path=self.source or None, field="model")
        cols = self.columns
        if len(set(cols)) != m:
            dup = next(c for c in cols if cols.count(c) > 1)
            raise InputError(f"duplicate column {dup!r}", path=self.source or None, field=shown(dup))
        if m == 0:
            raise InputError("the table has no metric columns", path=self.source or None)
        for b in self.benchmark_names:
            col = v[:, [j for j, bb in enumerate(self.benchmarks) if bb == b]]
            if n and np.isnan(col).all():
                raise InputError("every value of this benchmark is missing", path=self.source or None, field=shown(b))
        for g, w in self.group_weights.items():
            if not (math.isfinite(w) and w >= 0):
                raise InputError(f"group weight must be a finite number >= 0, got {w}", field=g)
        for b, c in self.costs.items():
            if not (math.isfinite(c) and c >= 0):
                raise InputError(f"cost must be a finite number >= 0, got {c}", field=b)

    # -------------------------------------------------------------------------------------------- views
    @property
    def columns(self) -> list[str]:
        """Column ids ``benchmark.metric``."""
        return [f"{b}.{m}" for b, m in zip(self.benchmarks, self.metrics)]

    @property
    def benchmark_names(self) -> list[str]:
        """The benchmarks in first-column order."""
        return list(dict.fromkeys(self.benchmarks))

    @property
    def n_models(self) -> int:
        return self.values.shape[0]

    def canonical(self) -> Table:
        """The same table in its canonical order: models sorted by name, columns by (benchmark, metric).
        EEVEE works on this form only (:class:`~modelseek.eevee.evaluators.Evaluator` takes it), so that the
        cross-validation splits, the initial weight draws, the search's draws and every sum see the same
        order whatever the order of the rows and columns of the file, or its layout (GATE, tidy, wide): the
        same table gives the same subsets and scores, bit for bit."""
        n, m = self.values.shape
        rows = sorted(range(n), key=lambda i: self.models[i])
        cols = sorted(range(m), key=lambda j: (self.benchmarks[j], self.metrics[j]))
        if rows == list(range(n)) and cols == list(range(m)):
            return self
        pick = lambda seq: tuple(seq[j] for j in cols)  # noqa: E731
        return replace(self, values=self.values[np.ix_(rows, cols)], models=tuple(self.models[i] for i in rows),
                       benchmarks=pick(self.benchmarks), metrics=pick(self.metrics),
                       lower_is_better=pick(self.lower_is_better), groups=pick(self.groups))

    def oriented(self) -> np.ndarray:
        """Values with lower-is-better columns negated (every column: higher is better)."""
        sign = np.where(np.asarray(self.lower_is_better, dtype=bool), -1.0, 1.0)
        return self.values * sign

    def column_weights(self, observed: np.ndarray | None = None) -> np.ndarray:
        """Weight of each column in the loss: MSE per column, averaged per benchmark, per group, then the
        groups averaged with their weights. ``observed`` (bool per column) drops columns with no value; the
        averages are taken over what remains. Weights sum to 1."""
        m = len(self.benchmarks)
        obs = np.ones(m, bool) if observed is None else np.asarray(observed, bool)
        w = np.zeros(m)
        if not obs.any():
            return w
        groups = [g for g in dict.fromkeys(self.groups)]
        gw = self._group_weight_map()
        live = [g for g in groups if any(obs[j] and self.groups[j] == g for j in range(m))]
        total = sum(gw[g] for g in live)
        if total <= 0:
            total, gw = float(len(live)), {g: 1.0 for g in live}
        for g in live:
            cols = [j for j in range(m) if self.groups[j] == g and obs[j]]
            benches = list(dict.fromkeys(self.benchmarks[j] for j in cols))
            for b in benches:
                bcols = [j for j in cols if self.benchmarks[j] == b]
                for j in bcols:
                    w[j] = gw[g] / total / len(benches) / len(bcols)
        return w

    def _group_weight_map(self) -> dict[str, float]:
        groups = list(dict.fromkeys(self.groups))
        known = [self.group_weights[g] for g in groups if g in self.group_weights]
        default = float(np.mean(known)) if known else 1.0
        return {g: float(self.group_weights.get(g, default)) for g in groups}

    def cost(self, subset: Iterable[str]) -> float:
        missing = [b for b in subset if b not in self.costs]
        if missing:
            raise InputError(f"no cost for benchmark(s) {', '.join(missing[:5])}", field="cost")
        return float(sum(self.costs[b] for b in subset))

    def __repr__(self) -> str:
        return (f"Table({self.n_models} models x {len(self.benchmarks)} metrics over "
                f"{len(self.benchmark_names)} benchmarks, {int(np.isnan(self.values).sum())} missing)")

    # -------------------------------------------------------------------------------------------- derive
    def with_groups(self, mapping: Mapping[str, Sequence[str]], weights: Mapping[str, float] | None = None
                    ) -> Table:
        """Assign task groups from ``{group: [benchmark.metric | benchmark, ...]}``. Entries naming columns
        that are not in the table are ignored (logged); columns no group names form a group of their own
        benchmark. Groups without a weight get the mean of the given weights."""
        col_group: dict[str, str] = {}
        cols = self.columns
        benches = set(self.benchmarks)
        unknown = []
        for g, entries in (mapping or {}).items():
            for e in entries or []:
                e = str(e).strip()
                if e in cols or e in benches:
                    for c, b in zip(cols, self.benchmarks):
                        if c == e or b == e:
                            col_group.setdefault(c, str(g))
                else:
                    unknown.append(e)
        if unknown:
            log.info("task mapping names %d column(s) not in the table (ignored), e.g. %s", len(unknown), unknown[0])
        unmapped = [c for c in cols if c not in col_group]
        if unmapped and mapping:
            log.warning("%d column(s) in no task group; each benchmark becomes its own group: %s",
                        len(unmapped), ", ".join(unmapped[:5]))
        groups = tuple(col_group.get(c, b) for c, b in zip(cols, self.benchmarks))
        gw = {str(k): float(v) for k, v in (weights or {}).items()}
        missing = sorted({g for g in groups if g not in gw}) if gw else []
        if missing:
            log.warning("no weight for task group(s) %s; they get the mean weight", ", ".join(missing))
        return replace(self, groups=groups, group_weights=gw)

    def take_models(self, rows: Sequence[int]) -> Table:
        """The table of the given rows (model positions), in the given order, everything else kept."""
        rows = [int(i) for i in rows]
        return replace(self, values=self.values[rows], models=tuple(self.models[i] for i in rows))

    def without_column(self, name: str) -> tuple[Table, np.ndarray]:
        """The table without one column, and that column's values (per model). ``name``: a column id
        ``benchmark.metric``, or a benchmark that has a single column. Used by ``--split-by COLUMN``: a column
        that orders the models (a release date, say) is metadata, neither an input nor a target."""
        cols = self.columns
        if name in cols:
            j = cols.index(name)
        else:
            hits = [i for i, b in enumerate(self.benchmarks) if b == name]
            if len(hits) != 1:
                why = "has several columns; name one as benchmark.metric" if hits else "is not a column of the table"
                raise InputError(f"{name!r} {why} (columns: {', '.join(map(shown, cols[:8]))}"
                                 f"{' ...' if len(cols) > 8 else ''})", path=self.source or None, field="split_by")
            j = hits[0]
        if len(cols) == 1:
            raise InputError("the table has no column left besides the ordering column", field="split_by")
        keep = [i for i in range(len(cols)) if i != j]
        pick = lambda seq: tuple(seq[i] for i in keep)  # noqa: E731
        rest = replace(self, values=self.values[:, keep], benchmarks=pick(self.benchmarks),
                       metrics=pick(self.metrics), lower_is_better=pick(self.lower_is_better),
                       groups=pick(self.groups),
                       costs={b: c for b, c in self.costs.items() if b in set(pick(self.benchmarks))})
        return rest, self.values[:, j].copy()

    def with_costs(self, costs: Mapping[str, float]) -> Table:
        known = set(self.benchmarks)
        unknown = [b for b in costs if b not in known]
        if unknown:
            log.warning("costs given for benchmark(s) not in the table (ignored): %s", ", ".join(unknown[:5]))
        return replace(self, costs={str(b): float(c) for b, c in costs.items() if b in known})

    # -------------------------------------------------------------------------------------------- readers
    @classmethod
    def from_frame(cls, frame, lower_is_better: Iterable[str] | None = None, source: str = "") -> Table:
        """From a DataFrame indexed by model, columns ``benchmark.metric`` strings or (benchmark, metric)
        tuples (a single name = benchmark with metric ``value``)."""
        benches, metrics = [], []
        for c in frame.columns:
            if isinstance(c, tuple):
                b, m = str(c[0]), str(c[1])
            elif "." in str(c):
                b, m = str(c).split(".", 1)
            else:
                b, m = str(c), "value"
            benches.append(b)
            metrics.append(m)
        try:
            values = frame.to_numpy(dtype=float)
        except (TypeError, ValueError) as exc:
            raise InputError(f"non-numeric cell: {exc}", path=source or None) from None
        return cls(values, tuple(str(x) for x in frame.index), tuple(benches), tuple(metrics),
                   _lib(benches, metrics, lower_is_better), source=source)

    @classmethod
    def from_gate_csv(cls, path: str | Path, lower_is_better: Iterable[str] | None = None) -> Table:
        path = Path(path)
        rows = _read_rows(path)
        if len(rows) < 2:
            raise InputError("a GATE table needs a benchmark row and a metric row", path=path)
        head, mrow = rows[0], rows[1]
        if len(mrow) != len(head):
            raise InputError(f"metric row has {len(mrow)} cells, header {len(head)}", path=path, line=2)
        benches = [h.strip() for h in head[1:]]
        metrics = [m.strip() for m in mrow[1:]]
        for j, (b, m) in enumerate(zip(benches, metrics)):
            if not b:
                raise InputError(f"empty benchmark name in column {j + 2}", path=path, line=1)
            if not m:
                raise InputError(f"empty metric name in column {j + 2}", path=path, line=2, field=shown(b))
        models, values = [], []
        for lineno, row in enumerate(rows[2:], start=3):
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(head):
                raise InputError(f"{len(row)} cells, header has {len(head)}", path=path, line=lineno)
            name = row[0].strip()
            if not name:
                raise InputError("empty model name", path=path, line=lineno, field=shown(head[0]) or "Model")
            if name in models:
                raise InputError(f"duplicate model {name!r}", path=path, line=lineno, field=shown(head[0]) or "Model")
            models.append(name)
            values.append([_cell(c, path, lineno, f"{b}.{m}") for c, b, m in zip(row[1:], benches, metrics)])
        if not models:
            raise InputError("no model rows", path=path)
        return cls._build(path, np.array(values, dtype=float), models, benches, metrics, lower_is_better)

    @classmethod
    def _build(cls, path: Path, values, models, benches, metrics, lower_is_better) -> Table:
        try:
            return cls(values, tuple(models), tuple(benches), tuple(metrics),
                       _lib(benches, metrics, lower_is_better), source=str(path))
        except InputError as exc:  # name the file
            raise InputError(exc.message, path=path, field=exc.field) from None

    @classmethod
    def from_tidy_csv(cls, path: str | Path, lower_is_better: Iterable[str] | None = None) -> Table:
        """One ``model,benchmark,metric,value`` row per cell (``metric`` optional: default ``value``)."""
        path = Path(path)
        rows = _read_rows(path)
        if not rows:
            raise InputError("empty file", path=path)
        head = [h.strip().lower() for h in rows[0]]
        for col in ("model", "benchmark", "value"):
            if col not in head:
                raise InputError("missing column", path=path, line=1, field=col)
        im, ib, iv = head.index("model"), head.index("benchmark"), head.index("value")
        imet = head.index("metric") if "metric" in head else None
        cells: dict[tuple[str, str], dict[str, float]] = {}
        models: list[str] = []
        for lineno, row in enumerate(rows[1:], start=2):
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(head):
                raise InputError(f"{len(row)} cells, header has {len(head)}", path=path, line=lineno)
            model, bench = row[im].strip(), row[ib].strip()
            metric = row[imet].strip() if imet is not None else "value"
            for name, val in (("model", model), ("benchmark", bench), ("metric", metric)):
                if not val:
                    raise InputError("empty", path=path, line=lineno, field=name)
            key = (bench, metric)
            v = _cell(row[iv], path, lineno, "value")
            column = cells.setdefault(key, {})
            if model in column:
                raise InputError(f"duplicate cell ({model}, {bench}, {metric})", path=path, line=lineno,
                                 field="value")
            column[model] = v
            if model not in models:
                models.append(model)
        if not models:
            raise InputError("no rows", path=path)
        keys = list(cells)
        values = np.array([[cells[k].get(mo, math.nan) for k in keys] for mo in models], dtype=float)
        return cls._build(path, values, models, [k[0] for k in keys], [k[1] for k in keys], lower_is_better)

    @classmethod
    def from_wide_csv(cls, path: str | Path, lower_is_better: Iterable[str] | None = None) -> Table:
        """One row per model, one column per benchmark: a header row, then ``model,value,value,...`` rows.

        The model-name column is the one headed ``model``, ``name``, ``model_name`` or ``model_id`` (any case),
        else the first column (an empty header, as pandas writes an index, included). Every other column is
        a benchmark; a header ``benchmark.metric`` names a metric of that benchmark (several columns may
        share a benchmark), a plain header is a benchmark with metric ``value``. ``--lower-is-better`` may
        name a column by its header too."""
        path = Path(path)
        rows = _read_rows(path)
        if not rows:
            raise InputError("empty file", path=path)
        head = [h.strip() for h in rows[0]]
        names = [i for i, h in enumerate(head) if h.lower() in _MODEL_COLUMNS]
        im = names[0] if names else 0
        cols = [j for j in range(len(head)) if j != im]
        if not cols:
            raise InputError("a models x benchmarks table needs a model column and at least one benchmark column",
                             path=path, line=1)
        benches, metrics = [], []
        for j in cols:
            h = head[j]
            if not h:
                raise InputError(f"empty benchmark name in column {j + 1}", path=path, line=1)
            b, m = h.split(".", 1) if "." in h else (h, "value")
            if not b.strip() or not m.strip():
                raise InputError(f"cannot read benchmark.metric from {h!r} (column {j + 1})", path=path, line=1)
            benches.append(b.strip())
            metrics.append(m.strip())
        models, values = [], []
        for lineno, row in enumerate(rows[1:], start=2):
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(head):
                raise InputError(f"{len(row)} cells, header has {len(head)}", path=path, line=lineno)
            name = row[im].strip()
            field_name = shown(head[im]) or "model"
            if not name:
                raise InputError("empty model name", path=path, line=lineno, field=field_name)
            if name in models:
                raise InputError(f"duplicate model {name!r}", path=path, line=lineno, field=field_name)
            models.append(name)
            values.append([_cell(row[j], path, lineno, head[j]) for j in cols])
        if not models:
            raise InputError("no model rows", path=path)
        lib = _lib(benches, metrics, lower_is_better)
        if lower_is_better is not None:  # a column may also be named by its header as written
            given = {x.strip().lower() for x in lower_is_better}
            lib = tuple(f or head[j].lower() in given for f, j in zip(lib, cols))
        try:
            return cls(np.array(values, dtype=float), tuple(models), tuple(benches), tuple(metrics), lib,
                       source=str(path))
        except InputError as exc:  # name the file
            raise InputError(exc.message, path=path, field=exc.field) from None

    @classmethod
    def read(cls, path: str | Path, lower_is_better: Iterable[str] | None = None) -> Table:
        """Read a tidy, GATE-layout or wide (one row per model, one column per benchmark) CSV, decided by the
        header: tidy when it has ``model``, ``benchmark`` and ``value`` columns, GATE when row 2 starts with
        ``Metric``, else wide."""
        path = Path(path)
        rows = _read_rows(path)
        head = [h.strip().lower() for h in (rows[0] if rows else [])]
        if {"model", "benchmark", "value"} <= set(head):
            return cls.from_tidy_csv(path, lower_is_better)
        if len(rows) >= 2 and rows[1] and rows[1][0].strip().lower() == "metric":
            return cls.from_gate_csv(path, lower_is_better)
        if len(head) >= 2:
            return cls.from_wide_csv(path, lower_is_better)
        raise InputError("unknown table layout: expected a wide CSV (a model column, then one column per "
                         "benchmark), a tidy CSV (model,benchmark,metric,value) or the GATE layout (row 1 "
                         "benchmarks, row 2 starting with 'Metric')", path=path, line=1)

    @classmethod
    def from_ground_truth(cls, truth, column: str = "f1") -> Table:
        """Rows = the ground truth's models, benchmarks = its tasks (one column ``column`` each)."""
        mat = truth.matrix(column).T  # models x tasks
        return cls(mat.to_numpy(dtype=float), tuple(str(m) for m in mat.index),
                   tuple(str(t) for t in mat.columns), tuple(column for _ in mat.columns),
                   tuple(column == "model_rank" for _ in mat.columns), source=getattr(truth, "source", ""))


def _lib(benches: Sequence[str], metrics: Sequence[str], lower: Iterable[str] | None) -> tuple[bool, ...]:
    """Lower-is-better flags: a column is lower-is-better when its metric name, or its ``benchmark.metric``
    id, is in ``lower`` (default :data:`LOWER_IS_BETTER`)."""
    names = {s.lower() for s in (LOWER_IS_BETTER if lower is None else lower)}
    return tuple(m.lower() in names or f"{b}.{m}".lower() in names for b, m in zip(benches, metrics))


def _read_rows(path: Path) -> list[list[str]]:
    fh = open_text(path, "table")  # a located error for a missing file, a folder, bytes that are not UTF-8
    reader = csv.reader(fh)
    try:
        with long_csv_fields():  # a cell of any length (the file itself is capped)
            return list(reader)
    except csv.Error as exc:
        raise InputError(f"cannot read as CSV: {exc}", path=path, line=reader.line_num or None) from None


def read_task_mapping(path: str | Path) -> dict[str, list[str]]:
    """``task_mapping.yaml``: ``{group: [benchmark.metric, ...]}`` (an empty group is allowed)."""
    data, src = read_yaml_located(path, "task mapping file")
    if not isinstance(data, dict):
        raise src.error("expected a mapping of task group -> list of benchmark.metric")
    out = {}
    for g, entries in data.items():
        if entries is None:
            entries = []
        if not isinstance(entries, list):
            raise src.error("expected a list", str(g))
        out[str(g)] = [str(e).strip() for e in entries]
    return out


def read_task_weights(path: str | Path) -> dict[str, float]:
    """``task_weights.yaml``: ``{group: weight}`` or ``{group: [weight]}`` (the GATE file's form)."""
    data, src = read_yaml_located(path, "task weights file")
    if not isinstance(data, dict):
        raise src.error("expected a mapping of task group -> weight")
    out = {}
    for g, w in data.items():
        if isinstance(w, list):
            if len(w) != 1:
                raise src.error(f"expected one weight, got {len(w)}", str(g))
            w = w[0]
        try:
            out[str(g)] = coerce(w, float)
        except InputError as exc:
            raise src.error(exc.message, str(g)) from None
        if out[str(g)] < 0:
            raise src.error(f"a weight must be >= 0, got {w}", str(g))
    return out


def read_costs(path: str | Path) -> dict[str, float]:
    """A ``benchmark,cost`` CSV (header required; cost e.g. GPU hours)."""
    path = Path(path)
    rows = _read_rows(path)
    if not rows:
        raise InputError("empty file", path=path)
    head = [h.strip().lower() for h in rows[0]]
    for col in ("benchmark", "cost"):
        if col not in head:
            raise InputError("missing column", path=path, line=1, field=col)
    ib, ic = head.index("benchmark"), head.index("cost")
    out: dict[str, float] = {}
    for lineno, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) < len(head):
            raise InputError(f"{len(row)} field(s), the header has {len(head)}", path=path, line=lineno)
        b = row[ib].strip()
        if not b:
            raise InputError("empty", path=path, line=lineno, field="benchmark")
        c = _cell(row[ic], path, lineno, "cost")
        if math.isnan(c) or c < 0:
            raise InputError("cost must be a number >= 0", path=path, line=lineno, field="cost")
        if b in out:
            raise InputError(f"duplicate benchmark {b!r}", path=path, line=lineno, field="benchmark")
        out[b] = c
    return out


def load_table(path: str | Path, mapping: str | Path | None = None, weights: str | Path | None = None,
               costs: str | Path | None = None, lower_is_better: Iterable[str] | None = None) -> Table:
    """Read a table and attach the optional task mapping, weights and costs files. ``task_mapping.yaml`` and
    ``task_weights.yaml`` beside the table are used when not given."""
    path = Path(path)
    table = Table.read(path, lower_is_better)
    if mapping is None and (path.parent / "task_mapping.yaml").exists():
        mapping = path.parent / "task_mapping.yaml"
    if weights is None and (path.parent / "task_weights.yaml").exists():
        weights = path.parent / "task_weights.yaml"
    if mapping is not None or weights is not None:
        table = table.with_groups(read_task_mapping(mapping) if mapping else {},
                                  read_task_weights(weights) if weights else None)
    if costs is not None:
        table = table.with_costs(read_costs(costs))
    return table
