"""Style retrieval end to end: features -> retriever -> TREC run -> MRR.

A method is named ``FEATURES-RETRIEVER``: features joined by ``+`` (``hist``, ``colour``, ``gram``,
``moments``, ...), retriever ``centroid``, ``knn`` or ``logreg``, e.g. ``gram+colour-logreg``; an optional
``@pcaN`` suffix compresses the standardised features with PCA fitted on the training images
(``gram-centroid@pca64``). ``fusion`` is reciprocal rank fusion of :data:`FUSION_MEMBERS`;
``fusion:a,b,c`` fuses the named methods.

Evaluation: each query has exactly one relevant model (the LoRA that made it), so the ground truth is a
:class:`~modelseek.GroundTruth` with F1 = 1 for the true model of each query (other models absent, grade
0); MRR comes from the shared :func:`~modelseek.evaluate`. Cross-validation is grouped by content image
(no content image is in both the training and the held-out side of a fold), as the task splits them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..retrieval.data.report import Report
from ..retrieval.data.run import Run
from ..retrieval.data.truth import GroundTruth
from ..core.errors import InputError, NotFittedError
from ..retrieval.evaluation import evaluate
from ..core.progress import progress_bar
from ..core.stats.bootstrap import paired_bootstrap
from .baseline import finetune_scores, parse_finetune
from .data import StyleDataset
from .descriptors import EXTRACTORS, extract_many, make_extractor
from .retrievers import RETRIEVERS, make_retriever, rrf

DEFAULT_METHODS = ("hist-centroid", "hist-knn", "hist-logreg", "colour-logreg", "texture-logreg", "gram-centroid",
                   "gram-knn", "gram-logreg", "moments-logreg", "texture+colour-centroid", "texture+colour-knn",
                   "texture+colour-logreg", "texture+colour+gram-logreg", "fusion")
FUSION_MEMBERS = ("texture+colour-logreg", "texture+colour+gram-logreg", "texture+colour-centroid")
BASELINE = "hist-centroid"


@dataclass(frozen=True)
class MethodSpec:
    name: str
    features: tuple[str, ...] = ()
    retriever: str = ""
    pca: int | None = None
    members: tuple[MethodSpec, ...] = ()
    finetune: Any = None  # a baseline.FineTune: the organisers' fine-tuned classifier (ARCH-finetune)

    @property
    def is_fusion(self) -> bool:
        return bool(self.members)

    def all_features(self) -> list[str]:
        if self.is_fusion:
            return list(dict.fromkeys(f for m in self.members for f in m.all_features()))
        return list(self.features)


def parse_method(name: str) -> MethodSpec:
    """Parse ``gram+colour-logreg``, ``gram-centroid@pca64``, ``fusion`` or ``fusion:a,b``."""
    name = str(name).strip()
    if name == "fusion" or name.startswith("fusion:"):
        members = FUSION_MEMBERS if name == "fusion" else [m for m in name.split(":", 1)[1].split(",") if m]
        if not members:
            raise InputError(f"{name!r}: name the fused methods, e.g. fusion:gram-logreg,colour-logreg",
                             field="method")
        specs = tuple(parse_method(m) for m in members)
        if any(s.is_fusion for s in specs):
            raise InputError(f"{name!r}: fusion members cannot be fusions", field="method")
        return MethodSpec(name, members=specs)
    base, _, opt = name.partition("@")
    feats, sep, retr = base.rpartition("-")
    if sep and feats and retr == "finetune":
        return MethodSpec(name, finetune=parse_finetune(name, feats, opt))
    if not sep or not feats:
        raise InputError(f"method {name!r} must look like FEATURES-RETRIEVER (e.g. gram-logreg); retrievers: "
                         f"{', '.join(RETRIEVERS.names())}; features: {', '.join(EXTRACTORS.names())}; "
                         f"or the organisers' baseline ARCH-finetune (e.g. resnet50-finetune)",
                         field="method")
    RETRIEVERS.get(retr)
    features = tuple(feats.split("+"))
    for f in features:
        EXTRACTORS.get(f.partition(":")[0])
    if len(set(features)) != len(features):
        raise InputError(f"method {name!r} repeats a feature", field="method")
    pca = None
    if opt:
        if not opt.startswith("pca") or not opt[3:].isdigit() or int(opt[3:]) < 1:
            raise InputError(f"method {name!r}: option must be @pcaN with N >= 1, got @{opt}", field="method")
        pca = int(opt[3:])
    return MethodSpec(name, features, retr, pca)


class FeatureBank:
    """Computes each extractor's features for a dataset once (disk cache optional) and hands out blocks."""

    def __init__(self, dataset: StyleDataset, size: int = 128, seed: int = 0, cache: str | Path | None = None,
                 progress: bool = False, extractor_params: Mapping[str, dict] | None = None,
                 registry: str | Path | None = None) -> None:
        self.dataset, self.size, self.seed, self.cache, self.progress = dataset, size, seed, cache, progress
        self.params = dict(extractor_params or {})
        self.registry = registry
        self._feats: dict[str, np.ndarray] = {}
        self._extra: dict[Any, np.ndarray] = {}  # what a fine-tuned method computes once per bank

    def _make(self, name: str):
        return make_extractor(name, seed=self.seed, registry=self.registry,
                              **self.params.get(name.partition(":")[0], {}))

    def prefetch(self, names: Sequence[str]) -> None:
        """Compute the features of every extractor in ``names`` not yet held, in one pass over the images."""
        todo = [n for n in dict.fromkeys(names) if n not in self._feats]
        if todo:
            mats = extract_many(self.dataset, [self._make(n) for n in todo], size=self.size, cache=self.cache,
                                progress=self.progress)
            self._feats.update(zip(todo, mats))

    def get(self, name: str) -> np.ndarray:
        self.prefetch([name])
        return self._feats[name]

    def matrix(self, features: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        blocks = [self.get(f) for f in features]
        return np.concatenate(blocks, axis=1), [b.shape[1] for b in blocks]


def method_scores(spec: MethodSpec, train: FeatureBank, train_idx: Sequence[int] | np.ndarray, test: FeatureBank,
                  test_idx: Sequence[int] | np.ndarray, labels: Sequence[str], models: Sequence[str], seed: int = 0,
                  params: Mapping[str, dict] | None = None) -> np.ndarray:
    """Fit ``spec`` on rows ``train_idx`` of ``train`` and score rows ``test_idx`` of ``test``."""
    if spec.finetune is not None:
        return finetune_scores(spec.finetune, train, train_idx, test, test_idx, labels, models)
    if spec.is_fusion:
        return rrf([method_scores(m, train, train_idx, test, test_idx, labels, models, seed, params)
                    for m in spec.members])
    Xtr, blocks = train.matrix(spec.features)
    Xte, _ = test.matrix(spec.features)
    kw = dict((params or {}).get(spec.retriever, {}))
    retr = make_retriever(spec.retriever, blocks=blocks, pca=spec.pca, seed=seed, **kw)
    retr.fit(Xtr[list(train_idx)], [labels[i] for i in train_idx], models)
    return retr.scores(Xte[list(test_idx)])


def scores_to_run(ids: Sequence[str], scores: np.ndarray, models: Sequence[str], run_id: str) -> Run:
    """A run ranking every model per query (decreasing score; ties by natural model id order)."""
    return Run.from_scores({q: dict(zip(models, map(float, row))) for q, row in zip(ids, scores)}, run_id)


def style_truth(ids: Sequence[str], labels: Sequence[str]) -> GroundTruth:
    """Single-relevant judgements: the true model of each query has F1 = 1 (grade 3), every other model is
    absent (grade 0). MRR over it is the mean reciprocal rank of the true model."""
    if len(ids) != len(labels):
        raise InputError(f"{len(ids)} query ids but {len(labels)} labels")
    if any(lab is None for lab in labels):
        raise InputError("every query needs a label to be scored")
    frame = pd.DataFrame({"task_id": [str(i) for i in ids], "model_id": [str(x) for x in labels], "f1": 1.0})
    return GroundTruth(frame)


def chance_mrr(n_models: int) -> float:
    """Expected MRR of a uniformly random ranking with one relevant model among ``n``: H_n / n."""
    if n_models < 1:
        raise InputError("need at least one model")
    return float(sum(1.0 / k for k in range(1, n_models + 1)) / n_models)


def score_run(run: Run, truth: GroundTruth) -> Report:
    return evaluate(run, truth, metrics=("mrr", "ndcg@1"))


class StyleRanker:
    """Fit a style-retrieval method on labelled images; rank every candidate model for new images.

    >>> ranker = StyleRanker("texture+colour+gram-logreg").fit(train)   # doctest: +SKIP
    >>> run = ranker.rank(test)                                          # doctest: +SKIP
    """

    def __init__(self, method: str = "texture+colour+gram-logreg", size: int = 128, seed: int = 0,
                 cache: str | Path | None = None, progress: bool = False,
                 params: Mapping[str, dict] | None = None, registry: str | Path | None = None) -> None:
        self.method, self.size, self.seed, self.cache, self.progress = method, size, seed, cache, progress
        self.params, self.registry = params, registry

    def fit(self, train: StyleDataset) -> StyleRanker:
        self.spec_ = parse_method(self.method)
        labels = train.known_labels()
        if len(set(labels)) < 2:  # checked before any feature is computed, naming the training file
            raise InputError(f"need training images of at least 2 models, got {len(set(labels))}",
                             path=train.source or None)
        self.train_ = train
        self.bank_ = FeatureBank(train, self.size, self.seed, self.cache, self.progress, self._ext_params(),
                                 self.registry)
        self.bank_.prefetch(self.spec_.all_features())
        return self

    def _ext_params(self):
        return {k: v for k, v in (self.params or {}).items() if k in EXTRACTORS}

    def scores(self, queries: StyleDataset) -> np.ndarray:
        if not hasattr(self, "spec_"):
            raise NotFittedError("StyleRanker is not fitted; call fit(train) first")
        if tuple(queries.models.ids) != tuple(self.train_.models.ids):
            raise InputError("queries and training images use different model lists")
        bank = FeatureBank(queries, self.size, self.seed, self.cache, self.progress, self._ext_params(), self.registry)
        bank.prefetch(self.spec_.all_features())
        return method_scores(self.spec_, self.bank_, range(len(self.train_)), bank, range(len(queries)),
                             self.train_.known_labels(), self.train_.models.ids, self.seed, self.params)

    def rank(self, queries: StyleDataset, run_id: str | None = None) -> Run:
        return scores_to_run(queries.ids, self.scores(queries), self.train_.models.ids,
                             run_id or _run_id(self.method))


def _run_id(method: str) -> str:
    return method.replace(":", "_").replace(",", "_").replace(" ", "")


# ------------------------------------------------------------------------------------ cross-validation
def content_folds(groups: Sequence[str], folds: int = 5, seed: int = 0) -> list[np.ndarray]:
    """Held-out row indices per fold; rows sharing a content group are always on the same side."""
    from sklearn.model_selection import GroupKFold  # lazy: sklearn

    names = np.asarray([str(g) for g in groups])
    n_groups = len(set(names))
    if folds < 2 or folds > n_groups:
        raise InputError(f"folds must be between 2 and the number of content groups ({n_groups}), got {folds}",
                         field="folds")
    splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    return [test for _, test in splitter.split(np.zeros(len(names)), groups=names)]


@dataclass
class StyleCVResult:
    methods: list[str]
    runs: dict[str, Run]
    reports: dict[str, Report]
    folds: list[np.ndarray]
    n_models: int
    extra: dict = field(default_factory=dict)

    @property
    def mrr(self) -> dict[str, float]:
        return {m: self.reports[m].mean()["mrr"] for m in self.methods}

    @property
    def top1(self) -> dict[str, float]:
        return {m: self.reports[m].mean()["ndcg@1"] for m in self.methods}

    @property
    def chance(self) -> float:
        return chance_mrr(self.n_models)

    def intervals(self, n_resamples: int = 1000, seed: int = 0) -> dict[str, tuple[float, float]]:
        out = {}
        for m in self.methods:
            iv = self.reports[m].intervals(n_resamples=n_resamples, seed=seed)
            row = iv[(iv["metric"] == "mrr") & (iv["tier"] == "all")].iloc[0]
            out[m] = (float(row["low"]), float(row["high"]))
        return out

    def versus(self, baseline: str = BASELINE, n_resamples: int = 1000, seed: int = 0) -> dict:
        """Paired bootstrap (over queries) of each method's MRR minus ``baseline``'s."""
        if baseline not in self.reports:
            raise InputError(f"baseline {baseline!r} was not run; methods: {', '.join(self.methods)}")
        base = self.reports[baseline].per_topic["mrr"]
        return {m: paired_bootstrap(self.reports[m].per_topic["mrr"].loc[base.index], base, n_resamples,
                                    seed=seed) for m in self.methods if m != baseline}

    def per_model(self) -> pd.DataFrame:
        """MRR per true model (rows) and method (columns)."""
        truth = self.extra.get("labels")
        frames = {m: self.reports[m].per_topic["mrr"] for m in self.methods}
        df = pd.DataFrame(frames)
        if truth is not None:
            df["model"] = [truth[t] for t in df.index]
            return df.groupby("model", sort=False)[self.methods].mean()
        return df

    def to_dict(self) -> dict:
        return {"mrr": self.mrr, "top1": self.top1, "chance": {"mrr": self.chance, "top1": 1.0 / self.n_models},
                "n_queries": len(next(iter(self.runs.values()))), "n_models": self.n_models,
                "folds": len(self.folds), **{k: v for k, v in self.extra.items() if k != "labels"}}

    def table(self) -> str:
        lines = [f"{'method':<32} {'MRR':>7} {'top-1':>7}", "-" * 48]
        for m in sorted(self.methods, key=lambda x: -self.mrr[x]):
            lines.append(f"{m:<32} {self.mrr[m]:>7.3f} {self.top1[m]:>7.3f}")
        lines.append(f"{'chance':<32} {self.chance:>7.3f} {1.0 / self.n_models:>7.3f}")
        return "\n".join(lines)


def cross_validate_style(dataset: StyleDataset, methods: Sequence[str] = DEFAULT_METHODS, folds: int = 5,
                         seed: int = 0, size: int = 128, cache: str | Path | None = None, progress: bool = False,
                         params: Mapping[str, dict] | None = None,
                         registry: str | Path | None = None) -> StyleCVResult:
    """Grouped k-fold CV (groups = content images): every method ranks each held-out image's candidates
    after fitting on the other folds; the held-out rankings form one run per method, scored by MRR."""
    labels = dataset.known_labels("cross-validation needs a label for every image")
    if dataset.groups is None:
        raise InputError("cross-validation needs content groups", path=dataset.source or None)
    specs = {m: parse_method(m) for m in methods}
    if len(specs) != len(list(methods)):
        raise InputError("a method is listed twice", field="method")
    ext_params = {k: v for k, v in (params or {}).items() if k in EXTRACTORS}
    if len(set(labels)) < 2:
        raise InputError(f"need images of at least 2 models, got {len(set(labels))}",
                         path=dataset.source or None)
    try:  # before any feature is computed; a data set with too few content images names its file
        held = content_folds(dataset.groups, folds, seed)
    except InputError as exc:
        raise InputError(exc.message, path=dataset.source or None, field=exc.field) from None
    bank = FeatureBank(dataset, size, seed, cache, progress, ext_params, registry)
    bank.prefetch([f for s in specs.values() for f in s.all_features()])
    models = list(dataset.models.ids)
    n = len(dataset)
    all_scores = {m: np.zeros((n, len(models))) for m in specs}
    for test_idx in progress_bar(held, desc="folds", disable=not progress):
        train_idx = np.setdiff1d(np.arange(n), test_idx)
        for m, spec in specs.items():
            all_scores[m][test_idx] = method_scores(spec, bank, train_idx, bank, test_idx, labels, models,
                                                    seed, params)
    truth = style_truth(dataset.ids, labels)
    runs = {m: scores_to_run(dataset.ids, all_scores[m], models, _run_id(m)) for m in specs}
    reports = {m: score_run(runs[m], truth) for m in specs}
    return StyleCVResult(list(specs), runs, reports, held, len(models),
                         extra={"labels": dict(zip(dataset.ids, labels))})
