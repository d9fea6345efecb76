"""Blue/Red scores of the Re-Align challenge, on embeddings computed (and cached) per registry model.

- **Blue** (models that agree): mean pairwise linear CKA over the submitted models, on the whole catalog.
- **Red** (stimuli on which models disagree): 1 - mean pairwise linear CKA across the registry's models, on
  the submitted stimuli only.

Mean pairwise = mean of the off-diagonal entries of the CKA matrix (each unordered pair once).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..retrieval.features.cache import default_cache_dir as features_dir
from ..core.progress import progress_bar
from .formats import ModelRegistry, StimulusCatalog, AlignSubmission, Team
from .linear_cka import cka_matrix
from ..retrieval.vision.models import embed_catalog


def default_cache_dir() -> Path:
    """``$MODELSEEK_CACHE/align`` if set, else ``~/.cache/modelseek/align`` (beside the text features)."""
    return features_dir().parent / "align"


def mean_offdiag(C: np.ndarray) -> float:
    m = C.shape[0]
    if m < 2:
        raise InputError("a mean pairwise CKA needs at least 2 models")
    iu = np.triu_indices(m, 1)
    return float(C[iu].mean())


def near_duplicates(names: Sequence[str], C: np.ndarray, threshold: float) -> list[tuple[str, str, float]]:
    """Pairs of models whose CKA is at least ``threshold``, as (a, b, cka) with a before b in ``names``;
    highest CKA first (ties: by the names, last first)."""
    pairs = sorted(((float(C[i, j]), names[i], names[j]) for i in range(len(names))
                    for j in range(i + 1, len(names)) if C[i, j] >= threshold), reverse=True)
    return [(a, b, c) for c, a, b in pairs]


@dataclass
class AlignData:
    """Embeddings of (some of) the registry's models on the whole catalog: name -> [N, dim] array."""

    registry: ModelRegistry
    catalog: StimulusCatalog
    features: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def compute(cls, registry: ModelRegistry, catalog: StimulusCatalog, models: Sequence[str] | None = None,
                cache_dir: str | os.PathLike | None = None, batch_size: int = 32,
                progress: bool = False, layers: Mapping[str, str | None] | None = None,
                layers_source: str | os.PathLike | None = None) -> AlignData:
        """Embed the catalog with each model (each finished model is cached: an interrupted run resumes).
        ``layers`` maps a model name to the layer to use instead of the registry's (a live submission's
        ``layer_name``, read from the file ``layers_source``): an unknown layer is reported against the file
        that names it (``models[i].layer_name`` of the submission, else the registry's ``layer``)."""
        names = list(models) if models is not None else registry.names()
        layers = dict(layers or {})
        data = cls(registry, catalog)
        for i, name in enumerate(progress_bar(names, desc="models", disable=not progress or len(names) < 2)):
            entry = registry.get(name).with_layer(layers.get(name))
            try:
                data.features[name] = embed_catalog(entry, catalog, cache_dir=cache_dir, batch_size=batch_size,
                                                    progress=progress)
            except InputError as exc:
                if exc.field != "layer" or exc.path is not None:
                    raise
                if layers.get(name) is not None:  # the submission's layer_name: the file to edit
                    raise InputError(exc.message, path=layers_source, field=f"models[{i}].layer_name") from None
                raise InputError(exc.message, path=registry.path, field="layer") from None
        return data

    def names(self) -> list[str]:
        return list(self.features)

    def matrix(self, models: Sequence[str] | None = None, stimuli: Sequence[int] | None = None,
               unbiased: bool = False) -> np.ndarray:
        names = list(models) if models is not None else self.names()
        feats = []
        for n in names:
            if n not in self.features:
                raise InputError(f"no embeddings computed for model {n!r}")
            F = self.features[n]
            feats.append(F if stimuli is None else F[np.asarray(stimuli)])
        return cka_matrix(feats, unbiased=unbiased)


def blue_score(data: AlignData, models: Sequence[str], unbiased: bool = False) -> float:
    """Mean pairwise CKA of the chosen models over the whole catalog (higher = better for Blue)."""
    return mean_offdiag(data.matrix(models, unbiased=unbiased))


def red_score(data: AlignData, stimuli: Sequence[int], models: Sequence[str] | None = None,
              unbiased: bool = False) -> float:
    """1 - mean pairwise CKA of the registry's models on the chosen stimuli (catalog positions)."""
    return 1.0 - mean_offdiag(data.matrix(models, stimuli=stimuli, unbiased=unbiased))


@dataclass
class ScoreResult:
    team: Team
    score: float
    names: list[str]
    matrix: np.ndarray
    n_stimuli: int

    def to_dict(self) -> dict:
        return {"team": self.team.value, "score": self.score, "models": self.names, "n_stimuli": self.n_stimuli,
                "cka_matrix": np.round(self.matrix, 12).tolist()}


def score_submission(sub: AlignSubmission, registry: ModelRegistry, catalog: StimulusCatalog,
                     cache_dir: str | os.PathLike | None = None, unbiased: bool = False,
                     batch_size: int = 32, progress: bool = False,
                     source: str | os.PathLike | None = None) -> ScoreResult:
    """Embed what a submission needs and score it (Blue: its models on the catalog; Red: all registry
    models on its stimuli). ``source``: the submission's file, named by errors in its ``layer_name``s."""
    if sub.team is Team.BLUE:
        layers = {n: sub.layer_of(i) for i, n in enumerate(sub.models)}
        data = AlignData.compute(registry, catalog, sub.models, cache_dir, batch_size, progress, layers=layers,
                                 layers_source=source)
        C = data.matrix(sub.models, unbiased=unbiased)
        return ScoreResult(Team.BLUE, mean_offdiag(C), list(sub.models), C, len(catalog))
    pos = catalog.positions(sub.stimuli)
    data = AlignData.compute(registry, catalog, None, cache_dir, batch_size, progress)
    C = data.matrix(stimuli=pos, unbiased=unbiased)
    return ScoreResult(Team.RED, 1.0 - mean_offdiag(C), data.names(), C, len(pos))
