"""Representational alignment (Re-Align): model registry and stimuli catalog formats (submissions in the live
and the draft form), model sources (one per library, a registry), embeddings by forward hooks, linear CKA
(biased/unbiased, Gram/feature routes, minibatch, all pairs at once), Blue/Red scoring and solvers for both teams,
and :func:`optimize_submission`, which assembles the solvers' inputs (what ``align optimize`` runs).

Heavy libraries (torch, transformers, PIL) are imported only inside the functions that need them.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ModelEntry": "formats", "ModelRegistry": "formats", "Stimulus": "formats", "StimulusCatalog": "formats",
    "AlignSubmission": "formats", "Strategy": "formats", "Team": "formats",
    "SubmissionForm": "formats", "load_align_submission": "formats", "validate_align_submission": "formats",
    "load_model": "models", "embed_images": "models", "embed_texts": "models", "embed_catalog": "models",
    "layer_names": "models", "preprocess_images": "models", "LoadedModel": "models", "resolve_entry": "models",
    "check_entry": "models", "SOURCES": "sources", "WeightsUnavailable": "sources",
    "cka": "linear_cka", "cka_matrix": "linear_cka", "minibatch_cka": "linear_cka", "hsic": "linear_cka",
    "MinibatchCKA": "linear_cka",
    "blue_score": "scoring", "red_score": "scoring", "score_submission": "scoring", "AlignData": "scoring",
    "optimize_red": "solvers", "optimize_blue": "solvers", "SolverResult": "solvers",
    "blue_objective": "solvers", "blue_upper_bound": "solvers", "red_objective": "solvers",
    "near_duplicates": "scoring", "optimize_submission": "optimize", "OptimizeOptions": "optimize",
    "Optimized": "optimize", "deep_check": "checks", "raise_for_checks": "checks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__
