"""Ground truth: the task x model fine-tuned F1 table, and what follows from it.

Derived per task: ``normalized_f1 = f1 / max f1``, ``model_rank`` (1 = best; ties share the lowest rank,
as in the organisers' file), relevance grades under a :class:`GradingScheme`, and criticality by expected
regret ``R = 1 - mean_m(normalized_f1)`` (:meth:`Criticality.from_regrets`) unless given;
:meth:`GroundTruth.tier_source` says which.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple, TYPE_CHECKING

import numpy as np
from .run import bad_identifier_char, describe_char, duplicated, factorize, natural_order
from ...core.io import atomic_write_text, check_file, decode_text, read_bytes
from .loaders import read_tasks_csv

if TYPE_CHECKING:  # pandas is imported where it is used: `import modelseek` stays light
    import pandas as pd

from ...core.enums import Choice
from ...core.errors import InputError
from .task import Criticality

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.I)

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
        """The gain of one grade; a negative grade (judged non-relevant in TREC qrels) gains 0, as in
        :meth:`gain_array`."""
        g = max(float(grade), 0.0)
        return float(2.0 ** g - 1.0) if self is GradingScheme.NTCIR else g

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
    model_code: np.ndarray | None = None  # optional: model[i] == model_names[model_code[i]]
    model_names: np.ndarray | None = None


class GroundTruth:
    """Fine-tuned F1 for (task, model) pairs. Immutable; ids are strings.

    A ``grade`` column (as read from TREC qrels by :meth:`from_qrels`) gives the relevance grades directly,
    whatever the scheme; they may be negative (judged non-relevant). Otherwise grades follow from F1."""

    def __init__(self, frame: pd.DataFrame, criticality: Mapping[str, Criticality | str] | None = None,
                 source: str = "", criticality_source: str = "") -> None:
        import pandas as pd  # a DataFrame was given: pandas is loaded already  # lazy: pandas

        missing = {"task_id", "model_id", "f1"} - set(frame.columns)
        if missing:
            raise InputError(f"ground truth needs columns task_id, model_id, f1; missing {sorted(missing)}")
        explicit = "grade" in frame.columns
        df = frame[["task_id", "model_id", "f1", *(["grade"] if explicit else [])]].copy()
        for col in ("task_id", "model_id"):
            if df[col].isna().any():
                raise InputError(f"ground truth row {int(np.flatnonzero(df[col].isna().to_numpy())[0])}: missing "
                                 f"{col}", field=col)
        for col in ("task_id", "model_id"):  # object columns of str (no per-call string-type conversions)
            if df[col].dtype != object or pd.api.types.infer_dtype(df[col], skipna=False) != "string":
                df[col] = df[col].astype(str).astype(object)
        f1 = df["f1"].astype(float).to_numpy(dtype=float)
        grade = df["grade"].astype(np.int64).to_numpy() if explicit else None
        tcode, tnames = pd.factorize(df["task_id"].to_numpy(dtype=object))
        mcode, mnames = pd.factorize(df["model_id"].to_numpy(dtype=object))
        self._setup(tcode, np.asarray(tnames, dtype=object), mcode, np.asarray(mnames, dtype=object), f1, grade)
        self._finish(criticality, source, criticality_source)

    @classmethod
    def _from_codes(cls, tcode: np.ndarray, tnames: np.ndarray, mcode: np.ndarray, mnames: np.ndarray,
                    f1: np.ndarray, grade: np.ndarray | None, source: str = "",
                    criticality: Mapping[str, Criticality | str] | None = None,
                    criticality_source: str = "") -> GroundTruth:
        """A ground truth from its columns as codes (``tnames[tcode]`` is each row's task id, names in order of
        first appearance), without pandas: the readers' road (``evaluate`` never imports it)."""
        truth = cls.__new__(cls)
        truth._setup(tcode, tnames, mcode, mnames, f1, grade)
        truth._finish(criticality, source, criticality_source)
        return truth

    def _setup(self, tcode: np.ndarray, tnames: np.ndarray, mcode: np.ndarray, mnames: np.ndarray,
               f1: np.ndarray, grade: np.ndarray | None) -> None:
        """Checks and derived columns, from task and model codes whose names are in order of first appearance."""
        i = _first_duplicate_pair(tcode, mcode)
        if i >= 0:
            raise InputError(f"duplicate (task, model) pair ({tnames[tcode[i]]}, {mnames[mcode[i]]})")
        if not np.isfinite(f1).all():
            raise InputError("f1 must be finite")
        codes, uniques = np.asarray(tcode, dtype=np.int64), tnames
        # tasks in their natural order, not the file's (issue #25: the same rows in any order give the same
        # answer to the last digit); only the distinct ids are sorted, the rows keep their places
        canon = natural_order([str(u) for u in uniques])
        if canon != list(range(len(uniques))):
            rank_of = np.empty(len(uniques), dtype=np.int64)
            rank_of[np.asarray(canon, dtype=np.int64)] = np.arange(len(uniques))
            codes, uniques = rank_of[codes], uniques[np.asarray(canon, dtype=np.int64)]
        best = np.full(len(uniques), -np.inf)
        np.maximum.at(best, codes, f1)
        maxes = best[codes]
        if grade is not None:  # qrels: a topic without a relevant document is normal
            norm = np.where(maxes > 0, np.maximum(f1, 0) / np.where(maxes > 0, maxes, 1.0), 0.0)
        else:
            if (maxes <= 0).any():
                bad = uniques[codes[np.flatnonzero(maxes <= 0)[0]]]
                raise InputError(f"task {bad!r}: every model has F1 <= 0; cannot normalise")
            norm = f1 / maxes
        # the table is kept as columns (codes for the ids); its DataFrame is built on first use (_df)
        self._tnames, self._mcode, self._mnames = uniques, np.asarray(mcode), mnames
        self._f1, self._grade, self._norm = f1, grade, norm
        self._codes = codes  # model_rank is computed on first use (_with_rank): scoring does not need it
        self.explicit_grades = grade is not None
        self._task_ids = [str(t) for t in uniques]
        self._order = np.argsort(codes, kind="stable")
        self._offsets = np.zeros(len(uniques) + 1, dtype=np.int64)
        np.cumsum(np.bincount(codes, minlength=len(uniques)), out=self._offsets[1:])

    def _finish(self, criticality: Mapping[str, Criticality | str] | None, source: str,
                criticality_source: str) -> None:
        self.source = source
        self._index = {t: i for i, t in enumerate(self._task_ids)}
        self._arrays: dict[GradingScheme, TruthArrays] = {}
        self._frame_cache: pd.DataFrame | None = None
        regret = 1.0 - np.bincount(self._codes, weights=self._norm, minlength=len(self._task_ids)) \
            / np.diff(self._offsets)
        given = {str(k): Criticality.parse(v) for k, v in (criticality or {}).items()}
        self._crit = dict(zip(self._task_ids, Criticality.from_regrets(regret)))
        self._given: set[str] = set()
        for t, c in given.items():
            if t in self._crit:
                self._crit[t] = c
                self._given.add(t)
        self.criticality_source = criticality_source or "given criticality"

    @property
    def _df(self) -> pd.DataFrame:
        """The long table (task_id, model_id, f1[, grade], normalized_f1), built on first use."""
        if self._frame_cache is None:
            import pandas as pd  # lazy: pandas

            cols = {"task_id": self._tnames[self._codes], "model_id": self._mnames[self._mcode], "f1": self._f1,
                    **({"grade": self._grade} if self._grade is not None else {}), "normalized_f1": self._norm}
            self._frame_cache = pd.DataFrame(cols)
        return self._frame_cache

    # ------------------------------------------------------------------------------------------ loading
    @classmethod
    def from_csv(cls, path: str | Path, tasks_csv: str | Path | None = None,
                 any_score: bool = False) -> GroundTruth:
        """Read ``task_id,model_id,f1[,...]`` (the official ground-truth format; extra columns are derived
        again from f1). Criticality comes from ``tasks_csv`` (or a ``tasks.csv`` beside the file).

        ``any_score=True`` reads a generic ground truth, e.g. a published model zoo's records: the ``f1``
        column may hold any higher-is-better score (accuracy in %, BLEU, a negative loss ...) and must only be
        finite. Grades still come from ``score / best score of the task``, so every task needs a positive
        best score; model ids are any strings without spaces (Hugging Face ids match a run's docIDs).

        A plain file goes through pyarrow's CSV reader (a million rows in well under a second); one that needs
        a located error, or holds non-ASCII text, is read row by row. A column named twice is an error, and
        so is an identifier holding a control or format character. Fields of any length are read."""
        path = Path(path)
        data = read_bytes(path, "ground-truth file")  # missing, directory, FIFO, over the cap: located errors
        text = decode_text(data, path)
        fields = _header(text, path)
        for col in ("task_id", "model_id", "f1"):
            if col not in fields:
                hint = (" (the score column is named f1 whatever it holds; with `any_score` it may hold accuracy "
                        "in %, BLEU ...)") if col == "f1" else ""
                header = ", ".join(map(repr, fields))[:200]
                raise InputError(f"missing column (the header has: {header}){hint}", path=path, line=1, field=col)
        crit_col = "criticality" if "criticality" in fields else None
        rows = _read_truth_arrow(data, fields, crit_col, any_score)
        if rows is None:  # the careful path only when the fast one refuses

            tasks, models, f1s, crit = _read_truth_careful(path, text, crit_col, any_score)
            rows = (*factorize(tasks), *factorize(models), np.asarray(f1s, dtype=float), crit)
        tc, tv, mc, mv, f1, crit = rows
        if f1.size == 0:
            raise InputError("no rows", path=path)
        best = np.full(len(tv), -np.inf)  # the best score of each task (codes in order of first appearance)
        np.maximum.at(best, tc, f1)
        if (best <= 0).any():
            i = int(np.flatnonzero(best <= 0)[0])
            t, b = str(tv[i]), float(best[i])
            line = _first_line_of(text, path, t)
            raise InputError(f"task {t!r}: the best score is {b:g} <= 0; grades are score / best score and "
                             f"need a positive best", path=path, line=line, field="f1")
        if tasks_csv is None and (path.parent / "tasks.csv").exists():
            tasks_csv = path.parent / "tasks.csv"
        sources = [f"the criticality column of {path}"] if crit else []
        if tasks_csv is not None:
            n = len(crit)
            for tid, row in read_tasks_csv(Path(tasks_csv)).items():
                if (row.get("task_criticalness") or "").strip():  # a short row has None
                    crit.setdefault(tid, row["task_criticalness"])
            if len(crit) > n:
                sources.append(f"tasks.csv ({tasks_csv})")
        try:
            return cls._from_codes(tc, tv, mc, mv, f1, None, source=str(path), criticality=crit,
                                   criticality_source=" and ".join(sources))
        except InputError as exc:
            raise InputError(exc.message, path=path) from None

    @classmethod
    def from_qrels(cls, path: str | Path) -> GroundTruth:
        """Read a TREC qrels file: ``topic iteration docno grade`` per line, white-space separated (trec_eval's
        format). Grades are integers; a negative grade means judged non-relevant. The grades are used as they
        are, under every scheme (``--scheme`` then only chooses the gain: 2^grade - 1 or the grade); weighted
        Kendall tau and regret use the grade as the score. Tiers follow the usual rule on grade / best grade
        of the topic and mean little for TREC topics."""
        path = Path(path)
        rows = _read_qrels_arrow(path)
        if rows is None:  # the careful path only when the fast one refuses; non-UTF-8 bytes: located

            data = read_bytes(path, "ground-truth file")
            tasks, models, grade_list = _read_qrels_careful(path, decode_text(data, path))
            del data
            rows = (*factorize(tasks), *factorize(models), np.asarray(grade_list, dtype=np.int64))
        tcode, tnames, mcode, mnames, grades = rows
        if grades.size == 0:
            raise InputError("no judgments", path=path)
        return cls._from_codes(tcode, tnames, mcode, mnames, grades.astype(float), grades, source=str(path))

    @staticmethod
    def detect_format(path: str | Path) -> str:
        """``qrels`` when the first non-blank line has four white-space separated fields ending in an integer
        and no comma, else ``csv``."""
        p = check_file(path, "ground-truth file")
        with open(p, "rb") as fh:
            head = fh.read(65536)
        for raw in head.decode("utf-8", "replace").lstrip("\ufeff").split("\n"):
            if raw.strip():
                parts = raw.split()
                return "qrels" if ("," not in raw and len(parts) == 4 and _INT.fullmatch(parts[3])) else "csv"
        return "csv"

    # ------------------------------------------------------------------------------------------ views
    @property
    def frame(self) -> pd.DataFrame:
        """A copy of the long table: task_id, model_id, f1, normalized_f1, model_rank."""
        return self._with_rank().copy()

    def _with_rank(self) -> pd.DataFrame:
        if "model_rank" not in self._df.columns:
            self._df["model_rank"] = _min_rank_desc(self._codes, self._df["f1"].to_numpy(dtype=float))
        return self._df

    @property
    def task_ids(self) -> list[str]:
        return list(self._task_ids)

    @property
    def model_ids(self) -> list[str]:
        return list(self._sorted_models)

    @functools.cached_property
    def _sorted_models(self) -> list[str]:
        """Every model id in natural order, sorted on first use: scoring a run never needs it (50,000 docnos of
        a qrels file took 0.07 s to sort)."""
        models = [str(m) for m in self._mnames]  # every name is used, in order of first appearance
        return [models[i] for i in natural_order(models)]

    def has_task(self, task_id: str) -> bool:
        return str(task_id) in self._index

    def arrays(self, scheme: GradingScheme | str = GradingScheme.NTCIR) -> TruthArrays:
        """The table as columns grouped by task, with the grades under ``scheme`` (computed once)."""
        s = GradingScheme.parse(scheme)
        hit = self._arrays.get(s)
        if hit is None:
            o = self._order
            grade = self._grade[o] if self._grade is not None else s.grade_array(self._norm[o])
            mcode = self._mcode[o]
            hit = TruthArrays(self._task_ids, self._offsets, self._mnames[mcode], self._f1[o], grade, mcode,
                              self._mnames)
            self._arrays[s] = hit
        return hit

    def matrix(self, column: str = "f1") -> pd.DataFrame:
        """Tasks x models table of ``column`` (f1, normalized_f1 or model_rank)."""
        m = self._with_rank().pivot(index="task_id", columns="model_id", values=column)
        return m.loc[self.task_ids, self.model_ids]

    def f1(self, task_id: str) -> dict[str, float]:
        lo, hi, a = self._slice(task_id)
        return dict(zip(a.model[lo:hi].tolist(), a.f1[lo:hi].tolist()))

    def normalized(self, task_id: str) -> dict[str, float]:
        lo, hi, _ = self._slice(task_id)
        rows = self._order[lo:hi]
        return dict(zip(self._mnames[self._mcode[rows]].tolist(), self._norm[rows].tolist()))

    def grades(self, task_id: str, scheme: GradingScheme | str = GradingScheme.NTCIR) -> dict[str, int]:
        lo, hi, a = self._slice(task_id, scheme)
        return dict(zip(a.model[lo:hi].tolist(), a.grade[lo:hi].tolist()))

    def regret(self, task_id: str) -> float:
        """Expected regret of a random pick: 1 - mean normalized F1."""
        lo, hi, _ = self._slice(task_id)
        return float(1.0 - self._norm[self._order[lo:hi]].mean())

    def criticality(self, task_id: str) -> Criticality:
        if str(task_id) not in self._crit:
            raise InputError(f"task {task_id!r} is not in the ground truth")
        return self._crit[str(task_id)]

    def tiers(self, task_ids: Iterable[str]) -> list[str]:
        """The criticality value (``low``/``medium``/``high``) of each task."""
        crit, value = self._crit, {c: c.value for c in Criticality}  # an enum's .value is a descriptor call
        try:
            return [value[crit[t]] for t in task_ids]
        except KeyError as exc:
            raise InputError(f"task {exc.args[0]!r} is not in the ground truth") from None

    def tier_source(self, task_ids: Iterable[str] | None = None) -> str:
        """Where the tiers of ``task_ids`` (default: every task) come from, in words: the tasks.csv or
        criticality column that gave them, or the regret rule (TREC qrels carry no criticality)."""
        ids = self._task_ids if task_ids is None else [str(t) for t in task_ids]
        n_given = sum(t in self._given for t in ids)
        rule = Criticality.rule()
        if self.explicit_grades:
            rule += " on grade / best grade: TREC qrels carry no criticality"
        if n_given == len(ids):
            return self.criticality_source
        if n_given == 0:
            return rule
        return f"{self.criticality_source} for {n_given} topic(s), {rule} for the other {len(ids) - n_given}"

    @property
    def criticalities(self) -> dict[str, Criticality]:
        return dict(self._crit)

    def subset(self, task_ids: Iterable[str], model_ids: Iterable[str] | None = None) -> GroundTruth:
        """The ground truth of some of its tasks (and, given ``model_ids``, only those models' rows)."""
        ids = [str(t) for t in task_ids]
        unknown = [t for t in ids if t not in self._crit]
        if unknown:
            raise InputError(f"task(s) not in the ground truth: {', '.join(unknown[:5])}")
        keep = self._df[self._df["task_id"].isin(ids)]
        if model_ids is not None:
            keep = keep[keep["model_id"].isin({str(m) for m in model_ids})]
        keep = keep[["task_id", "model_id", "f1", *(["grade"] if self.explicit_grades else [])]]
        return GroundTruth(keep, criticality={t: self._crit[t] for t in ids if t in self._given}, source=self.source,
                           criticality_source=self.criticality_source)

    def rename_models(self, mapping: Mapping[str, str]) -> GroundTruth:
        """A new ground truth whose model ids are renamed by ``mapping`` (others unchanged); two ids of one task
        that become the same model are an error."""
        df = self._df[["task_id", "model_id", "f1", *(["grade"] if self.explicit_grades else [])]].copy()
        df["model_id"] = [mapping.get(m, m) for m in df["model_id"].tolist()]
        dup = df.duplicated(["task_id", "model_id"])
        if dup.any():
            row = df[dup].iloc[0]
            raise InputError(f"task {row.task_id!r} names model {row.model_id!r} twice (once by its pool id, once by "
                             f"its Hugging Face id)", path=self.source or None, field="model_id")
        return GroundTruth(df, criticality={t: self._crit[t] for t in self._given}, source=self.source,
                           criticality_source=self.criticality_source)

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
        df = self._with_rank().copy()
        df["model_rank"] = df["model_rank"].astype(float)
        df["relevance_score"] = (df["grade"].to_numpy() if self.explicit_grades
                                 else s.grade_array(df["normalized_f1"].to_numpy()))
        df["criticality"] = [self._crit[t].value for t in df["task_id"]]
        return df[["task_id", "model_id", "f1", "model_rank", "normalized_f1", "relevance_score", "criticality"]]

    def to_csv(self, path: str | Path, scheme: GradingScheme | str = GradingScheme.NTCIR) -> None:
        atomic_write_text(path, self.to_frame(scheme).to_csv(index=False))

    def __len__(self) -> int:
        return int(self._f1.size)

    def __repr__(self) -> str:
        return f"GroundTruth({len(self._task_ids)} tasks x {len(self._mnames)} models)"


def _first_duplicate_pair(ca: np.ndarray, cb: np.ndarray) -> int:
    """Index of the first row whose (a, b) pair of codes came before (-1 if none): integer keys, one sort to
    know."""
    if ca.size < 2:
        return -1
    key = ca.astype(np.int64) * (int(cb.max()) + 1) + cb
    sk = np.sort(key)
    if not (sk[1:] == sk[:-1]).any():
        return -1
    return int(np.flatnonzero(duplicated(key))[0])


def _min_rank_desc(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Rank of every value within its group, best (largest) first, ties sharing the lowest rank (pandas'
    ``rank(method="min", ascending=False)``), by one sort."""
    n = values.size
    if n == 0:
        return np.zeros(0, dtype=int)
    by_value = np.argsort(-values, kind="stable")  # two stable sorts: lexsort's order, faster
    order = by_value[np.argsort(codes[by_value], kind="stable")]
    sc, sv = codes[order], values[order]
    pos = np.arange(n)
    task_start = np.r_[True, sc[1:] != sc[:-1]]
    new_value = task_start | np.r_[True, sv[1:] != sv[:-1]]
    start = np.maximum.accumulate(np.where(task_start, pos, 0))
    first = np.maximum.accumulate(np.where(new_value, pos, 0))
    out = np.empty(n, dtype=int)
    out[order] = first - start + 1
    return out


# ---------------------------------------------------------------------------------------------- readers
def _header(text: str, path: Path) -> list[str]:
    """The header's column names (stripped); a column named twice is an error."""
    first = text.split("\n", 1)[0].rstrip("\r")
    old = csv.field_size_limit(max(len(first) + 1, csv.field_size_limit()))  # a header of any length
    try:
        fields = next(csv.reader([first]), [])
    except csv.Error as exc:
        raise InputError(f"malformed header: {exc}", path=path, line=1) from None
    finally:
        csv.field_size_limit(old)
    fields = [f.strip() for f in fields]
    seen: dict[str, int] = {}
    for i, f in enumerate(fields, 1):
        if f in seen and f:
            raise InputError(f"column {f!r} is named twice (columns {seen[f]} and {i})", path=path, line=1,
                             field=f)
        seen[f] = i
    return fields


def _read_truth_arrow(data: bytes, fields: list[str], crit_col: str | None, any_score: bool):
    """pyarrow's CSV reader (ids dictionary-encoded: one Python string per distinct id) over a plain file whose
    every value is valid; None otherwise (then the careful reader locates the problem)."""
    from . import _arrow  # pyarrow: imported on first read, not by `import modelseek`  # lazy: pyarrow

    if not _arrow.is_plain(data) or b'"' in data:
        return None
    if b"\r" in data:
        if b"\r" in data.replace(b"\r\n", b""):
            return None  # a bare carriage return
        data = data.replace(b"\r\n", b"\n")
    if b"\n\n" in data or data.startswith(b"\n") or any(f != f.strip() for f in fields):
        return None
    use = ["task_id", "model_id", "f1", *([crit_col] if crit_col else [])]
    tb = _arrow.read_table(data, None, ",", ("f1",), use)
    if tb is None:
        return None
    n = tb.num_rows
    if n == 0 or n + 1 != _arrow.n_lines(data):
        return None
    f1 = _arrow.floats(tb, "f1")
    if not np.isfinite(f1).all() or (not any_score and ((f1 < 0) | (f1 > 1)).any()):
        return None

    (tc, tv), (mc, mv) = _arrow.encode(tb, "task_id"), _arrow.encode(tb, "model_id")
    for values in (tv, mv):
        vals = values.tolist()
        if any(v == "" or v != v.strip() or " " in v or "\t" in v for v in vals):
            return None  # empty ids and ids with spaces: the careful reader strips or locates them
    key = tc.astype(np.int64) * len(mv) + mc
    sk = np.sort(key)
    if (sk[1:] == sk[:-1]).any():
        return None
    crit: dict[str, Criticality | str] = {}
    if crit_col:
        cc, cv = _arrow.encode(tb, crit_col)
        given = cv[cc] != ""
        if given.any():
            last = {}
            for t, c in zip(tv[tc[given]].tolist(), cv[cc[given]].tolist()):
                last[t] = c
            try:
                crit = {str(k): Criticality.parse(v) for k, v in last.items()}
            except InputError:
                return None
    return tc, tv, mc, mv, f1, crit


def _cell(row: list[str], i: int | None) -> str | None:
    """Column ``i`` of a CSV row; None when the column is absent or the row is short."""
    return row[i] if i is not None and i < len(row) else None


def _read_truth_careful(path: Path, text: str, crit_col: str | None, any_score: bool):
    """Row by row with :mod:`csv`; the first problem is an error naming its line and field."""
    tasks, models, f1s = [], [], []
    crit: dict[str, Criticality | str] = {}
    seen: set[tuple[str, str]] = set()
    limit = max(len(text) + 1, csv.field_size_limit())
    old = csv.field_size_limit(limit)  # a field may be as long as the (capped) file; restored below
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, [])
        idx = {name.strip(): i for i, name in enumerate(header)}
        it, im, i1 = idx["task_id"], idx["model_id"], idx["f1"]
        ic = idx.get(crit_col) if crit_col else None
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise InputError(f"malformed CSV: {exc}", path=path, line=reader.line_num) from None
            lineno = reader.line_num
            if not row or not any(x.strip() for x in row):
                continue
            t, m, raw = (_cell(row, it) or "").strip(), (_cell(row, im) or "").strip(), _cell(row, i1)
            if not t:
                raise InputError("empty", path=path, line=lineno, field="task_id")
            if not m:
                raise InputError("empty", path=path, line=lineno, field="model_id")
            for fname, value in (("task_id", t), ("model_id", m)):
                c = bad_identifier_char(value)
                if c is not None:
                    raise InputError(f"{value[:60]!r} holds {describe_char(c)}, a control or format character",
                                     path=path, line=lineno, field=fname)
            if raw is None or not _FLOAT.fullmatch(raw.strip()):
                raise InputError(f"not a number: {(raw or '')[:60]!r}", path=path, line=lineno, field="f1")
            f1 = float(raw)
            if not math.isfinite(f1):
                raise InputError(f"must be finite, got {raw.strip()[:60]}", path=path, line=lineno, field="f1")
            if not any_score and (f1 < 0 or f1 > 1):
                raise InputError(f"must be in [0, 1], got {raw.strip()[:60]} (for another higher-is-better score, "
                                 f"e.g. accuracy in %, read it as any score: `any_score`)", path=path,
                                 line=lineno, field="f1")
            if (t, m) in seen:
                raise InputError(f"duplicate (task, model) pair ({t}, {m})", path=path, line=lineno,
                                 field="model_id")
            seen.add((t, m))
            tasks.append(t)
            models.append(m)
            f1s.append(f1)
            cv = _cell(row, ic)
            if ic is not None and cv is not None and cv.strip():
                try:
                    crit[t] = Criticality.parse(cv)
                except InputError as exc:
                    raise InputError(exc.message, path=path, line=lineno, field=crit_col) from None
    finally:
        csv.field_size_limit(old)
    return tasks, models, np.asarray(f1s, dtype=float), crit


def _first_line_of(text: str, path: Path, task: str) -> int | None:
    for lineno, raw in enumerate(text.split("\n"), 1):
        if lineno > 1 and raw.split(",", 1)[0].strip().strip('"') == task:
            return lineno
    return None


def _read_qrels_arrow(path: Path):
    """The fast path of qrels (see ``run._parse_arrow``): (topic codes, topics, docno codes, docnos, grades) when
    every line is valid and no (topic, docno) pair repeats; None otherwise."""
    from . import _arrow  # pyarrow: imported on first read, not by `import modelseek`  # lazy: pyarrow

    coded = _arrow.read_spaced(path, "ground-truth file", ["topic", "iter", "docno", "grade"], ())
    if coded is None:
        return None
    gc, gv = coded.text["grade"]
    values = []
    for v in gv.tolist():
        if not _INT.fullmatch(v) or len(v.lstrip("+-").lstrip("0")) > 10 or abs(int(v)) > 2**31:
            return None
        values.append(int(v))
    (tc, tv), (dc, dv) = coded.text["topic"], coded.text["docno"]
    if any((v == "").any() for v in (tv, dv, coded.text["iter"][1])):
        return None  # an empty field: two spaces in a row, or a line starting with one
    key = tc.astype(np.int64) * len(dv) + dc
    key.sort()
    if (key[1:] == key[:-1]).any():
        return None  # a repeated pair: the careful path names both lines
    return tc, tv, dc, dv, np.asarray(values, dtype=np.int64)[gc]


def _read_qrels_careful(path: Path, text: str) -> tuple[list[str], list[str], list[int]]:
    """Line by line; the first problem is an error naming its line and field."""
    tasks: list[str] = []
    models: list[str] = []
    grades: list[int] = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, raw in enumerate(text.split("\n"), 1):
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise InputError(f"expected 4 columns (topic iteration docno grade), found {len(parts)}",
                             path=path, line=lineno)
        t, _, d, g = parts
        for fname, value in (("topic", t), ("docno", d)):
            c = bad_identifier_char(value)
            if c is not None:
                raise InputError(f"{value!r} holds {describe_char(c)}, a control or format character",
                                 path=path, line=lineno, field=fname)
        # the length first: int() of over 4,300 digits raises (a hostile file's 300,001-digit grade)
        if not _INT.fullmatch(g) or len(g.lstrip("+-").lstrip("0")) > 10 or abs(int(g)) > 2**31:
            what = "an integer grade beyond 2^31" if _INT.fullmatch(g) else "not an integer grade"
            raise InputError(f"{what}: {g[:40]!r}{' ...' if len(g) > 40 else ''} ({len(g):,} characters)"
                             if len(g) > 40 else f"{what}: {g!r}", path=path, line=lineno, field="grade")
        if (t, d) in seen:
            raise InputError(f"duplicate (topic, docno) pair ({t}, {d}); first on line {seen[(t, d)]}",
                             path=path, line=lineno, field="docno")
        seen[(t, d)] = lineno
        tasks.append(t)
        models.append(d)
        grades.append(int(g))
    return tasks, models, grades
