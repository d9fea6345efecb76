"""Ground truth: the task x model fine-tuned F1 table, and what follows from it.

Derived per task: ``normalized_f1 = f1 / max f1``, ``model_rank`` (1 = best; ties share the lowest rank,
as in the organisers' file), relevance grades under a :class:`GradingScheme`, and criticality by expected
regret ``R = 1 - mean_m(normalized_f1)`` (Low < 0.03 <= Medium < 0.10 <= High) unless given.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple, TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported where it is used: `import modelseek` stays light
    import pandas as pd

from ..enums import Choice
from ..errors import InputError
from .task import Criticality

# Normalized F1 is rounded to this many decimals before grading, so that a ratio meant to be exactly
# 0.90 (e.g. 0.27 / 0.30 = 0.9000000000000001 in floating point) takes the grade of 0.90.
_GRADE_DECIMALS = 10


class GradingScheme(Choice):
    """How normalized F1 maps to graded relevance and gain.

    * ``ntcir`` — the official NTCIR-19 scheme: <=0.90 -> 0, (0.90, 0.95] -> 1, (0.95, 0.99] -> 2,
      >0.99 -> 3; gain 2^rel - 1.
    * ``paper`` — the NTCIR paper's finer scheme: >=0.975 -> 4, [0.95, 0.975) -> 3, [0.925, 0.95) -> 2,
      [0.90, 0.925) -> 1, else 0; gain rel.
    """

    NTCIR = "ntcir"
    PAPER = "paper"

    def grade(self, normalized_f1: float) -> int:
        x = round(float(normalized_f1), _GRADE_DECIMALS)
        if self is GradingScheme.NTCIR:
            if x <= 0.90:
                return 0
            if x <= 0.95:
                return 1
            if x <= 0.99:
                return 2
            return 3
        if x >= 0.975:
            return 4
        if x >= 0.95:
            return 3
        if x >= 0.925:
            return 2
        if x >= 0.90:
            return 1
        return 0

    def grade_array(self, normalized_f1) -> np.ndarray:
        """:meth:`grade` of every value (vectorised; values within 1e-8 of a threshold take the scalar rule, so
        both give the same grade to the last bit)."""
        x = np.asarray(normalized_f1, dtype=float)
        r = np.round(x, _GRADE_DECIMALS)
        if self is GradingScheme.NTCIR:
            thr = np.array([0.90, 0.95, 0.99])
            g = (r[:, None] > thr).sum(axis=1)
        else:
            thr = np.array([0.90, 0.925, 0.95, 0.975])
            g = (r[:, None] >= thr).sum(axis=1)
        g = g.astype(np.int64)
        near = np.flatnonzero((np.abs(x[:, None] - thr) < 1e-8).any(axis=1))
        for i in near.tolist():
            g[i] = self.grade(x[i])
        return g

    def gain_array(self, grades) -> np.ndarray:
        """:meth:`gain` of every grade; a negative grade (judged non-relevant in TREC qrels) gains 0."""
        g = np.maximum(np.asarray(grades, dtype=float), 0.0)
        return np.exp2(g) - 1.0 if self is GradingScheme.NTCIR else g

    def gain(self, grade: float) -> float:
        return float(2.0 ** grade - 1.0) if self is GradingScheme.NTCIR else float(grade)

    @property
    def max_grade(self) -> int:
        return 3 if self is GradingScheme.NTCIR else 4


class TruthArrays(NamedTuple):
    """A ground truth as columns grouped by task (``tasks[i]`` holds rows ``offsets[i]:offsets[i+1]``, in file
    order): model ids, F1 (or the score) and grades under one scheme."""

    tasks: list[str]
    offsets: np.ndarray
    model: np.ndarray
    f1: np.ndarray
    grade: np.ndarray


class GroundTruth:
    """Fine-tuned F1 for (task, model) pairs. Immutable; ids are strings.

    A ``grade`` column (as read from TREC qrels by :meth:`from_qrels`) gives the relevance grades directly,
    whatever the scheme; they may be negative (judged non-relevant). Otherwise grades follow from F1."""

    def __init__(self, frame: pd.DataFrame, criticality: Mapping[str, Criticality | str] | None = None,
                 source: str = "") -> None:
        import pandas as pd

        missing = {"task_id", "model_id", "f1"} - set(frame.columns)
        if missing:
            raise InputError(f"ground truth needs columns task_id, model_id, f1; missing {sorted(missing)}")
        explicit = "grade" in frame.columns
        df = frame[["task_id", "model_id", "f1", *(["grade"] if explicit else [])]].copy()
        for col in ("task_id", "model_id"):
            if df[col].isna().any():
                raise InputError(f"ground truth row {int(np.flatnonzero(df[col].isna().to_numpy())[0])}: missing "
                                 f"{col}", field=col)
        df["task_id"] = df["task_id"].astype(str).astype(object)
        df["model_id"] = df["model_id"].astype(str).astype(object)
        df["f1"] = df["f1"].astype(float)
        if explicit:
            df["grade"] = df["grade"].astype(np.int64)
        if df.duplicated(["task_id", "model_id"]).any():
            dup = df[df.duplicated(["task_id", "model_id"])].iloc[0]
            raise InputError(f"duplicate (task, model) pair ({dup.task_id}, {dup.model_id})")
        if not np.isfinite(df["f1"]).all():
            raise InputError("f1 must be finite")
        maxes = df.groupby("task_id", sort=False)["f1"].transform("max")
        if explicit:  # qrels: a topic without a relevant document is normal
            df["normalized_f1"] = np.where(maxes > 0, np.maximum(df["f1"], 0) / maxes.where(maxes > 0, 1.0), 0.0)
        else:
            if (maxes <= 0).any():
                bad = df.loc[maxes <= 0, "task_id"].iloc[0]
                raise InputError(f"task {bad!r}: every model has F1 <= 0; cannot normalise")
            df["normalized_f1"] = df["f1"] / maxes
        df["model_rank"] = df.groupby("task_id", sort=False)["f1"].rank(method="min", ascending=False).astype(int)
        self._df = df.reset_index(drop=True)
        self.explicit_grades = explicit
        self.source = source
        codes, uniques = pd.factorize(self._df["task_id"])
        self._task_ids = [str(t) for t in uniques]
        self._model_ids = [str(m) for m in pd.unique(self._df["model_id"])]
        self._order = np.argsort(codes, kind="stable")
        self._offsets = np.zeros(len(uniques) + 1, dtype=np.int64)
        np.cumsum(np.bincount(codes, minlength=len(uniques)), out=self._offsets[1:])
        self._index = {t: i for i, t in enumerate(self._task_ids)}
        self._arrays: dict[GradingScheme, TruthArrays] = {}
        regret = 1.0 - np.bincount(codes, weights=self._df["normalized_f1"].to_numpy(), minlength=len(uniques)) \
            / np.diff(self._offsets)
        given = {str(k): Criticality.parse(v) for k, v in (criticality or {}).items()}
        self._crit = {t: given.get(t) or Criticality.from_regret(float(r)) for t, r in zip(self._task_ids, regret)}

    # ------------------------------------------------------------------------------------------ loading
    @classmethod
    def from_csv(cls, path: str | Path, tasks_csv: str | Path | None = None,
                 any_score: bool = False) -> "GroundTruth":
        """Read ``task_id,model_id,f1[,...]`` (the official ground-truth format; extra columns are derived
        again from f1). Criticality comes from ``tasks_csv`` (or a ``tasks.csv`` beside the file).

        ``any_score=True`` reads a generic ground truth, e.g. a published model zoo's records: the ``f1``
        column may hold any higher-is-better score (accuracy in %, BLEU, a negative loss ...) and must only be
        finite. Grades still come from ``score / best score of the task``, so every task needs a positive
        best score; model ids are any strings without spaces (Hugging Face ids match a run's docIDs)."""
        from ..io import open_text

        path = Path(path)
        rows = []
        with open_text(path, "ground-truth file") as fh:  # missing, directory, non-UTF-8: located errors
            reader = csv.DictReader(fh)
            fields = reader.fieldnames or []
            for col in ("task_id", "model_id", "f1"):
                if col not in fields:
                    raise InputError("missing column", path=path, line=1, field=col)
            crit_col = "criticality" if "criticality" in fields else None
            crit: dict[str, Criticality | str] = {}
            seen: set[tuple[str, str]] = set()
            first_line: dict[str, int] = {}
            for lineno, row in enumerate(reader, start=2):
                t, m = (row["task_id"] or "").strip(), (row["model_id"] or "").strip()
                if not t:
                    raise InputError("empty", path=path, line=lineno, field="task_id")
                if not m:
                    raise InputError("empty", path=path, line=lineno, field="model_id")
                try:
                    f1 = float(row["f1"])
                except (TypeError, ValueError):
                    raise InputError(f"not a number: {row['f1']!r}", path=path, line=lineno, field="f1") from None
                if not math.isfinite(f1):
                    raise InputError(f"must be finite, got {row['f1']}", path=path, line=lineno, field="f1")
                if not any_score and (f1 < 0 or f1 > 1):
                    raise InputError(f"must be in [0, 1], got {row['f1']} (for another higher-is-better score, "
                                     f"e.g. accuracy in %, read it as any score: --any-score)", path=path,
                                     line=lineno, field="f1")
                first_line.setdefault(t, lineno)
                if (t, m) in seen:
                    raise InputError(f"duplicate (task, model) pair ({t}, {m})", path=path, line=lineno,
                                     field="model_id")
                seen.add((t, m))
                rows.append((t, m, f1))
                if crit_col and (row.get(crit_col) or "").strip():
                    try:
                        crit[t] = Criticality.parse(row[crit_col])
                    except InputError as exc:
                        raise InputError(exc.message, path=path, line=lineno, field=crit_col) from None
        if not rows:
            raise InputError("no rows", path=path)
        best: dict[str, float] = {}
        for t, _, f1 in rows:
            best[t] = max(best.get(t, -math.inf), f1)
        for t, b in best.items():
            if b <= 0:
                raise InputError(f"task {t!r}: the best score is {b:g} <= 0; grades are score / best score and "
                                 f"need a positive best", path=path, line=first_line[t], field="f1")
        if tasks_csv is None and (path.parent / "tasks.csv").exists():
            tasks_csv = path.parent / "tasks.csv"
        if tasks_csv is not None:
            from .loaders import read_tasks_csv

            for tid, row in read_tasks_csv(Path(tasks_csv)).items():
                if (row.get("task_criticalness") or "").strip():  # a short row has None
                    crit.setdefault(tid, row["task_criticalness"])
        import pandas as pd
        frame = pd.DataFrame(rows, columns=["task_id", "model_id", "f1"])
        try:
            return cls(frame, criticality={t: c for t, c in crit.items()}, source=str(path))
        except InputError as exc:
            raise InputError(exc.message, path=path) from None

    @classmethod
    def from_matrix(cls, matrix: pd.DataFrame, criticality: Mapping[str, str] | None = None) -> "GroundTruth":
        """From a tasks x models DataFrame of F1 (NaN = not run)."""
        long = matrix.rename_axis(index="task_id", columns="model_id").stack().rename("f1").reset_index()
        return cls(long, criticality=criticality)

    # ------------------------------------------------------------------------------------------ views
    @property
    def frame(self) -> pd.DataFrame:
        """A copy of the long table: task_id, model_id, f1, normalized_f1, model_rank."""
        return self._df.copy()

    @property
    def task_ids(self) -> list[str]:
        return list(self._task_ids)

    @property
    def model_ids(self) -> list[str]:
        return list(self._model_ids)

    def has_task(self, task_id: str) -> bool:
        return str(task_id) in self._index

    def arrays(self, scheme: GradingScheme | str = GradingScheme.NTCIR) -> TruthArrays:
        """The table as columns grouped by task, with the grades under ``scheme`` (computed once)."""
        s = GradingScheme.parse(scheme)
        hit = self._arrays.get(s)
        if hit is None:
            df, o = self._df, self._order
            grade = (df["grade"].to_numpy()[o] if self.explicit_grades
                     else s.grade_array(df["normalized_f1"].to_numpy()[o]))
            hit = TruthArrays(self._task_ids, self._offsets, df["model_id"].to_numpy(dtype=object)[o],
                              df["f1"].to_numpy(dtype=float)[o], grade)
            self._arrays[s] = hit
        return hit

    def matrix(self, column: str = "f1") -> pd.DataFrame:
        """Tasks x models table of ``column`` (f1, normalized_f1 or model_rank)."""
        m = self._df.pivot(index="task_id", columns="model_id", values=column)
        return m.loc[self.task_ids, self.model_ids]

    def f1(self, task_id: str) -> dict[str, float]:
        lo, hi, a = self._slice(task_id)
        return dict(zip(a.model[lo:hi].tolist(), a.f1[lo:hi].tolist()))

    def normalized(self, task_id: str) -> dict[str, float]:
        lo, hi, _ = self._slice(task_id)
        rows = self._order[lo:hi]
        return dict(zip(self._df["model_id"].to_numpy()[rows].tolist(),
                        self._df["normalized_f1"].to_numpy()[rows].tolist()))

    def grades(self, task_id: str, scheme: GradingScheme | str = GradingScheme.NTCIR) -> dict[str, int]:
        lo, hi, a = self._slice(task_id, scheme)
        return dict(zip(a.model[lo:hi].tolist(), a.grade[lo:hi].tolist()))

    def qrels(self, scheme: GradingScheme | str = GradingScheme.NTCIR) -> dict[str, dict[str, int]]:
        return {t: self.grades(t, scheme) for t in self._task_ids}

    def regret(self, task_id: str) -> float:
        """Expected regret of a random pick: 1 - mean normalized F1."""
        lo, hi, _ = self._slice(task_id)
        return float(1.0 - self._df["normalized_f1"].to_numpy()[self._order[lo:hi]].mean())

    def criticality(self, task_id: str) -> Criticality:
        if str(task_id) not in self._crit:
            raise InputError(f"task {task_id!r} is not in the ground truth")
        return self._crit[str(task_id)]

    @property
    def criticalities(self) -> dict[str, Criticality]:
        return dict(self._crit)

    def subset(self, task_ids: Iterable[str]) -> "GroundTruth":
        ids = [str(t) for t in task_ids]
        unknown = [t for t in ids if t not in self._crit]
        if unknown:
            raise InputError(f"task(s) not in the ground truth: {', '.join(unknown[:5])}")
        keep = self._df[self._df["task_id"].isin(ids)]
        keep = keep[["task_id", "model_id", "f1", *(["grade"] if self.explicit_grades else [])]]
        return GroundTruth(keep, criticality={t: self._crit[t] for t in ids}, source=self.source)

    def _slice(self, task_id: str, scheme: GradingScheme | str = GradingScheme.NTCIR) -> tuple[int, int, TruthArrays]:
        # rows of one task in the task-grouped arrays: looking up every task stays linear in the table's size
        i = self._index.get(str(task_id))
        if i is None:
            raise InputError(f"task {task_id!r} is not in the ground truth")
        return int(self._offsets[i]), int(self._offsets[i + 1]), self.arrays(scheme)

    # ------------------------------------------------------------------------------------------ output
    def to_frame(self, scheme: GradingScheme | str = GradingScheme.NTCIR) -> pd.DataFrame:
        """The official format plus criticality: task_id, model_id, f1, model_rank, normalized_f1,
        relevance_score, criticality."""
        s = GradingScheme.parse(scheme)
        df = self._df.copy()
        df["model_rank"] = df["model_rank"].astype(float)
        df["relevance_score"] = (df["grade"].to_numpy() if self.explicit_grades
                                 else s.grade_array(df["normalized_f1"].to_numpy()))
        df["criticality"] = [self._crit[t].value for t in df["task_id"]]
        return df[["task_id", "model_id", "f1", "model_rank", "normalized_f1", "relevance_score", "criticality"]]

    def to_csv(self, path: str | Path, scheme: GradingScheme | str = GradingScheme.NTCIR) -> None:
        from ..io import atomic_write_text

        atomic_write_text(path, self.to_frame(scheme).to_csv(index=False))

    def __len__(self) -> int:
        return len(self._df)

    def __repr__(self) -> str:
        return f"GroundTruth({len(self._task_ids)} tasks x {len(self._model_ids)} models)"
