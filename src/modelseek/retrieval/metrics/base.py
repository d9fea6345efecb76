"""The metric contract: one registered object per measure, carrying both of its forms.

* :meth:`Metric.per_list` — the reference definition over one topic: a ranked list of document ids and the
  topic's :class:`Judgments` (tested against hand-computed and published values);
* :meth:`Metric.vectorised` — the same measure for every topic of a run at once, over the arrays that
  :func:`modelseek.retrieval.evaluation.evaluate` builds once per run (:class:`Batch`). The base class's form calls
  :meth:`per_list` topic by topic, so a new metric is its per-list formula only; the built-ins override it with
  segment sums, and ``tests/test_metrics_contract.py`` checks that both forms agree on every registered metric.

:func:`modelseek.retrieval.evaluation.evaluate` dispatches every name through :data:`METRICS` (no list of built-ins
there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.truth import GradingScheme
from ...core.errors import InputError
from ...core.registry import PluginRegistry
from ...core.kinds import named, overrides, takes

if TYPE_CHECKING:
    from ..data.truth import TruthArrays


@dataclass(frozen=True)
class Judgments:
    """What is known about one topic: graded relevance and F1 of every candidate."""

    grades: Mapping[str, int]
    f1: Mapping[str, float]
    scheme: GradingScheme = GradingScheme.NTCIR
    relevance_level: int = 1  # the lowest grade that counts as relevant for MRR (trec_eval's -l)


@dataclass
class Batch:
    """Every scored topic of one run as flat arrays, rows grouped by topic in evaluation order.

    Topic ``w`` (``0 <= w < W``, in the order of ``topics``) holds rows ``seg_start[w]:seg_start[w + 1]``;
    ``pos`` is a row's 0-based position within its topic, ``doc_code`` its docID as a code into ``doc_names``
    (``doc`` spells them out on first use: the built-ins never need a million strings). ``hit`` is the row's
    index in the ground truth's task-grouped arrays ``truth`` (-1 when the ground truth does not judge that
    docID), ``grade`` and ``f1`` its grade (0 when unjudged; integer grades as 16-bit integers when they fit:
    convert before arithmetic that could leave that range) and F1 (NaN when unjudged; built on first use);
    ``t_of_w`` maps a topic to its row in ``truth.tasks``. ``judgments(w)`` and ``ranking(w)`` give one topic in
    the per-list form."""

    topics: list[str]
    seg: np.ndarray
    pos: np.ndarray
    seg_start: np.ndarray
    doc_code: np.ndarray
    doc_names: np.ndarray
    hit: np.ndarray
    grade: np.ndarray
    truth: TruthArrays
    t_of_w: np.ndarray
    scheme: GradingScheme
    relevance_level: int
    cache: dict[Any, Any] = field(default_factory=dict)  # shared between metrics of one call (ideal DCG ...)

    @property
    def W(self) -> int:
        return len(self.topics)

    @property
    def doc(self) -> np.ndarray:
        """Every row's docID (an object array of str), built on first use."""
        if "doc" not in self.cache:
            self.cache["doc"] = self.doc_names[self.doc_code]
        return self.cache["doc"]

    @property
    def f1(self) -> np.ndarray:
        """Every row's F1 (NaN when unjudged), built on first use (only regret and plugins read it)."""
        if "f1" not in self.cache:
            f1 = self.truth.f1[np.maximum(self.hit, 0)]
            f1[self.hit < 0] = np.nan
            self.cache["f1"] = f1
        return self.cache["f1"]

    @property
    def matched(self) -> np.ndarray:
        return self.hit >= 0

    @property
    def present(self) -> np.ndarray:
        return np.diff(self.seg_start) > 0

    def ranking(self, w: int) -> list[str]:
        return self.doc[self.seg_start[w]:self.seg_start[w + 1]].tolist()

    def judgments(self, w: int) -> Judgments:
        ta, t = self.truth, int(self.t_of_w[w])
        lo, hi = int(ta.offsets[t]), int(ta.offsets[t + 1])
        models = ta.model[lo:hi].tolist()
        return Judgments(dict(zip(models, ta.grade[lo:hi].tolist())), dict(zip(models, ta.f1[lo:hi].tolist())),
                         self.scheme, self.relevance_level)


class Metric:
    """One measure. Subclasses set ``cutoff`` (``"required"``, ``"optional"`` or ``"none"``),
    ``higher_is_better``, ``missing`` (the value of a topic absent from the run; NaN leaves it out of the means)
    and implement :meth:`per_list`; they may override :meth:`vectorised` and :meth:`trec_name`."""

    name: str = ""
    cutoff: str = "optional"
    higher_is_better: bool = True
    missing: float = 0.0

    def check(self, k: int | None) -> None:
        """An :class:`InputError` when the cut-off ``k`` does not suit the metric."""
        if self.cutoff == "required" and k is None:
            raise InputError(f"{self.name} needs a cut-off, e.g. {self.name}@5", field="metrics")
        if self.cutoff == "none" and k is not None:  # a cut-off would be silently ignored
            raise InputError(f"{self.name} takes no cut-off (got {self.name}@{k}); it compares whole rankings",
                             field="metrics")

    def per_list(self, ranking: Sequence[str], j: Judgments, k: int | None) -> float:
        raise NotImplementedError

    def vectorised(self, b: Batch, k: int | None) -> np.ndarray:
        """The value of every topic of ``b`` (one per topic, ``missing`` where the run has none): by default
        :meth:`per_list` topic by topic."""
        out = np.full(b.W, self.missing, dtype=float)
        for w in np.flatnonzero(b.present).tolist():
            out[w] = float(self.per_list(b.ranking(w), b.judgments(w), k))
        return out

    def trec_name(self, k: int | None) -> str:
        """The measure's name in trec_eval's output (``@`` written ``_``)."""
        return self.name if k is None else f"{self.name}_{k}"


CUTOFFS = ("required", "optional", "none")


def check_metric(name: str, obj: object) -> Metric:
    """The metric kind's one check (:data:`modelseek.core.kinds.KINDS`), run when it registers and on every plugin:
    a :class:`Metric` subclass (made with no arguments) or instance that implements ``per_list(ranking, j, k)``
    (its vectorised form may be the base class's loop), ``vectorised(b, k)`` and ``trec_name(k)``, with ``cutoff``
    one of required/optional/none, a boolean ``higher_is_better`` and a numeric ``missing``. It is registered under
    ``name`` (its ``name`` is set to it; one set to another name is refused)."""

    metric = obj() if isinstance(obj, type) and issubclass(obj, Metric) else obj
    if not isinstance(metric, Metric):
        raise TypeError(f"a metric is a Metric subclass or instance (modelseek.retrieval.metrics), got {obj!r}")
    cls = type(metric)
    if not overrides(cls, Metric, "per_list"):
        raise TypeError(f"metric {cls.__name__} does not implement per_list(ranking, j, k)")
    takes(f"{cls.__name__}.per_list", cls.per_list, ("ranking", "j", "k"))
    takes(f"{cls.__name__}.vectorised", cls.vectorised, ("b", "k"))
    takes(f"{cls.__name__}.trec_name", cls.trec_name, ("k",))
    if metric.cutoff not in CUTOFFS:
        raise ValueError(f"metric {cls.__name__}: cutoff must be one of {', '.join(CUTOFFS)}, got {metric.cutoff!r}")
    if not isinstance(metric.higher_is_better, bool):
        raise TypeError(f"metric {cls.__name__}: higher_is_better must be True or False")
    if not isinstance(metric.missing, (int, float)):
        raise TypeError(f"metric {cls.__name__}: missing must be a number (NaN leaves the topic out)")
    if metric.name:
        named(f"metric {cls.__name__}", metric.name, name)
    metric.name = name
    return metric


#: every metric: this package's modules (each registers its own; a new metric is one file), then the entry points
#: of the kind's group (``modelseek.retrieval.metrics``, :data:`modelseek.core.kinds.KINDS`)
METRICS: PluginRegistry[Metric] = PluginRegistry("metric", __package__)


def parse(name: str) -> tuple[str, int | None]:
    """``ndcg@5`` -> ``("ndcg", 5)``; a bad or non-positive cut-off is an :class:`InputError`."""
    base, _, cut = name.strip().lower().partition("@")
    k = None
    if cut:
        try:
            k = int(cut)
        except ValueError:
            raise InputError(f"bad cut-off in metric {name!r}; write e.g. ndcg@5") from None
        if k < 1:
            raise InputError(f"cut-off must be >= 1 in metric {name!r}")
    return base, k


def resolve(name: str) -> tuple[Metric, int | None]:
    """The registered metric of ``name`` and its cut-off, checked (unknown names: the registry's error)."""
    base, k = parse(name)
    metric = METRICS.get(base)
    metric.check(k)
    return metric, k


def segment_sum(seg: np.ndarray, values: np.ndarray, W: int) -> np.ndarray:
    return np.bincount(seg, weights=values, minlength=W)[:W]

