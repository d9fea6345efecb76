"""Retrievers: from image features to a full ranking of every candidate style model per query.

Each retriever is a small estimator: ``fit(X, y, models)`` (``models`` fixes the candidate order; models
without training images still get a score, below every seen model) returns ``self``; ``scores(X)`` gives
an ``n_queries x n_models`` matrix of finite scores, higher = more likely the image's style model.

* ``centroid`` — nearest class centroid by cosine similarity in the standardised feature space (Rocchio's
  centroid classifier; the "prototype" retrieval of few-shot learning).
* ``knn`` — cosine k-nearest neighbours: a model's score is the summed similarity of its images among the
  ``k`` nearest training images, ties broken by its single most similar image, so that every model is ranked.
* ``logreg`` — multinomial logistic regression (scikit-learn) on standardised features; scores are
  log-probabilities.
* fusion — reciprocal rank fusion of several retrievers' rankings (Cormack, Clarke & Büttcher, SIGIR 2009:
  ``sum_m 1 / (k + rank_m)`` with k = 60).

Features made of several blocks (e.g. Gram + colour) are standardised per column and each block is scaled
by ``1/sqrt(dim)`` so that every block weighs the same; ``pca`` (optional) then compresses them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..retrieval.data.run import Run
from ..core.errors import InputError, NotFittedError
from ..retrieval.fusion import fuse
from ..core.registry import Registry
from ..core.kinds import named, register, takes

RETRIEVERS: Registry[type] = Registry("style retriever")
"""Every style retriever: the classes below, then the entry points of ``modelseek.style_retrievers`` (checked by
:func:`check_retriever`)."""
RRF_K = 60


def check_retriever(name: str, obj: object) -> type:
    """The style-retriever kind's one check (:data:`modelseek.core.kinds.KINDS`): a class whose ``name`` is ``name``,
    with
    ``fit(X, y, models)`` (returning the fitted retriever) and ``scores(X)``; a :class:`Retriever` subclass gets its
    input checks and its order of candidates from the base class."""

    if not isinstance(obj, type):
        raise TypeError(f"a style retriever is a class (e.g. a Retriever subclass), got {obj!r}")
    named(f"style retriever {obj.__name__}", getattr(obj, "name", None), name)
    takes(f"{obj.__name__}.fit", getattr(obj, "fit", None), ("X", "y", "models"))
    takes(f"{obj.__name__}.scores", getattr(obj, "scores", None), ("X",))
    return obj


class Preprocess:
    """Column standardisation, equal block weights, optional PCA (fitted on training features only)."""

    def __init__(self, blocks: Sequence[int] | None = None, pca: int | None = None, seed: int = 0) -> None:
        self.blocks, self.pca, self.seed = blocks, pca, seed

    def fit(self, X: np.ndarray) -> Preprocess:
        X = np.asarray(X, np.float64)
        self.mean_ = X.mean(0)
        std = X.std(0)
        self.scale_ = np.where(std > 1e-8, std, 1.0)
        weights = np.ones(X.shape[1])
        if self.blocks:
            if sum(self.blocks) != X.shape[1]:
                raise ValueError(f"blocks {self.blocks} do not add up to {X.shape[1]} columns")
            start = 0
            for d in self.blocks:
                weights[start:start + d] = 1.0 / np.sqrt(d)
                start += d
        self.scale_ = self.scale_ / weights
        self.pca_ = None
        if self.pca:
            from sklearn.decomposition import PCA  # lazy: sklearn

            k = int(min(self.pca, X.shape[0] - 1, X.shape[1]))
            if k >= 1:
                self.pca_ = PCA(n_components=k, random_state=self.seed).fit((X - self.mean_) / self.scale_)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        Z = (np.asarray(X, np.float64) - self.mean_) / self.scale_
        return self.pca_.transform(Z) if self.pca_ is not None else Z


def _check(X: np.ndarray, name: str = "X") -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise InputError(f"{name} must be a 2-d feature matrix, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise InputError(f"{name} holds NaN or infinite values")
    return X


def _unit(X: np.ndarray) -> np.ndarray:
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


class Retriever:
    """Base: stores parameters only; ``fit`` validates and learns."""

    name = "retriever"

    def __init__(self, blocks: Sequence[int] | None = None, pca: int | None = None, seed: int = 0) -> None:
        self.blocks, self.pca, self.seed = blocks, pca, seed

    def fit(self, X: np.ndarray, y: Sequence[str], models: Sequence[str]) -> Retriever:
        X = _check(X)
        labels = np.asarray([str(v) for v in y])
        if len(labels) != len(X):
            raise InputError(f"{len(X)} feature rows but {len(labels)} labels")
        self.models_ = [str(m) for m in models]
        unknown = sorted(set(labels) - set(self.models_))
        if unknown:
            raise InputError(f"label(s) not among the candidate models: {', '.join(unknown[:5])}")
        self.seen_ = [m for m in self.models_ if m in set(labels)]
        if len(self.seen_) < 2:
            raise InputError(f"need training images of at least 2 models, got {len(self.seen_)}")
        self.pre_ = Preprocess(self.blocks, self.pca, self.seed).fit(X)
        self._fit(self.pre_.transform(X), labels)
        return self

    def scores(self, X: np.ndarray) -> np.ndarray:
        if not hasattr(self, "pre_"):
            raise NotFittedError(f"{self.name} retriever is not fitted; call fit first")
        X = _check(X)
        seen = self._scores(self.pre_.transform(X))  # n x len(seen_)
        out = np.empty((len(X), len(self.models_)))
        floor = seen.min(axis=1, keepdims=True) - 1.0
        out[:] = floor
        col = {m: j for j, m in enumerate(self.models_)}
        for j, m in enumerate(self.seen_):
            out[:, col[m]] = seen[:, j]
        return out

    def _fit(self, Z: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _scores(self, Z: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


@register("style retriever", name="centroid")
class CentroidRetriever(Retriever):
    name = "centroid"

    def _fit(self, Z, y):
        U = _unit(Z)
        self.centroids_ = _unit(np.stack([U[y == m].mean(0) for m in self.seen_]))

    def _scores(self, Z):
        return _unit(Z) @ self.centroids_.T


@register("style retriever", name="knn")
class KNNRetriever(Retriever):
    name = "knn"

    def __init__(self, k: int = 10, blocks=None, pca=None, seed: int = 0) -> None:
        super().__init__(blocks, pca, seed)
        self.k = k

    def _fit(self, Z, y):
        if self.k < 1:
            raise InputError(f"k must be >= 1, got {self.k}", field="k")
        self.train_ = _unit(Z)
        idx = {m: j for j, m in enumerate(self.seen_)}
        self.codes_ = np.array([idx[v] for v in y])

    def _scores(self, Z):
        sims = _unit(Z) @ self.train_.T  # n x n_train
        n, c = len(Z), len(self.seen_)
        k = min(self.k, sims.shape[1])
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        votes = np.zeros((n, c))
        rows = np.repeat(np.arange(n), k)
        np.add.at(votes, (rows, self.codes_[top].ravel()), (1.0 + sims[np.arange(n)[:, None], top]).ravel())
        best = np.full((n, c), -1.0)
        for j in range(c):
            best[:, j] = sims[:, self.codes_ == j].max(axis=1)
        return votes + 1e-3 * (1.0 + best)  # votes decide; the closest image breaks ties


@register("style retriever", name="logreg")
class LogRegRetriever(Retriever):
    name = "logreg"

    def __init__(self, C: float = 10.0, max_iter: int = 500, blocks=None, pca=None, seed: int = 0) -> None:
        super().__init__(blocks, pca, seed)
        self.C, self.max_iter = C, max_iter

    def _fit(self, Z, y):
        import warnings

        from sklearn.exceptions import ConvergenceWarning  # lazy: sklearn
        from sklearn.linear_model import LogisticRegression  # lazy: sklearn

        # With more features than images, an L2-penalised linear model's weights lie in the span of the
        # centred training features (representer theorem), so fitting on their PCA coordinates gives the
        # same model, much faster.
        self.span_ = None
        if Z.shape[1] >= Z.shape[0]:
            from sklearn.decomposition import PCA  # lazy: sklearn

            self.span_ = PCA(n_components=Z.shape[0] - 1, svd_solver="full").fit(Z)
            Z = self.span_.transform(Z)
        self.clf_ = LogisticRegression(C=self.C, max_iter=self.max_iter, random_state=self.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.clf_.fit(Z, y)
        self.order_ = [list(self.clf_.classes_).index(m) for m in self.seen_]

    def _scores(self, Z):
        if self.span_ is not None:
            Z = self.span_.transform(Z)
        return self.clf_.predict_log_proba(Z)[:, self.order_]


def make_retriever(name: str, **params) -> Retriever:
    return RETRIEVERS.get(name)(**params)


def ranks_from_scores(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every column per row (ties: lower column index first, a stable order)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    rows = np.arange(scores.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, scores.shape[1] + 1)[None, :]
    return ranks


def rrf(score_list: Sequence[np.ndarray], k: int = RRF_K) -> np.ndarray:
    """Reciprocal rank fusion of several ``n x m`` score matrices over the same queries and models, by
    :func:`modelseek.retrieval.fusion.fuse` (columns are docIDs 0..m-1, so ties go to the lower column)."""
    if not score_list:
        raise InputError("fusion needs at least one member")
    shape = score_list[0].shape
    if any(s.shape != shape for s in score_list):
        raise InputError("fusion members disagree on the number of queries or models")
    runs = [Run.from_scores({str(q): {str(j): float(v) for j, v in enumerate(row)} for q, row in enumerate(s)},
                            f"m{i}") for i, s in enumerate(score_list)]
    fused = fuse(runs, "rrf", k=k)
    out = np.zeros(shape)
    for q in range(shape[0]):
        for d, v in (fused.scores(str(q)) if str(q) in fused else {}).items():
            out[q, int(d)] = v
    return out
