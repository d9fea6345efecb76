"""Re-Align optimisation in one call: build the solver's inputs, run it, compare, and make the submission.

The inputs come from one of three places: the registry's models embedded on the catalog (cached), a stored
models x models CKA matrix (Blue; what ``align matrix -o`` writes) or stored per-model embeddings (Red; what
``align embed -o`` writes). :func:`optimize_submission` assembles the matrix or the features, runs
:func:`~modelseek.align.solvers.optimize_blue` / :func:`~modelseek.align.solvers.optimize_red`, adds the objective
of a submission to compare with as the baseline ``"compare"``, and returns the chosen submission beside the
solver's result (score, baselines, trajectory). ``modelseek align optimize`` is this function and its printing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.registry import closest
from .formats import AlignSubmission, ModelRegistry, StimulusCatalog, SubmissionForm, Team, load_align_submission
from .formats.arrays import load_cka_matrix, load_embeddings
from .scoring import AlignData, default_cache_dir
from .solvers import SolverResult, blue_objective, optimize_blue, optimize_red, red_objective
from .solvers import _check_work

#: annealing steps when :attr:`OptimizeOptions.steps` is None
DEFAULT_STEPS = {Team.RED: 5000, Team.BLUE: 20_000}


@dataclass(frozen=True)
class OptimizeOptions:
    """How to search: the size of the subset and the solver's settings, and how to embed when models run."""

    size: int                       # stimuli (Red) or models (Blue) to choose
    steps: int | None = None        # annealing steps; None: DEFAULT_STEPS of the team
    pool: int | None = None         # Red: candidate pool after screening (None: the solver's default)
    restarts: int = 20              # Blue: local-search restarts
    seed: int = 0
    unbiased: bool = False          # Blue from embeddings: unbiased HSIC in CKA (Red's solver is biased only)
    form: SubmissionForm = SubmissionForm.LIVE  # the form the submission will be written in
    cache_dir: str | os.PathLike | None = None  # embedding cache (None: scoring.default_cache_dir())
    batch_size: int = 32
    progress: bool = False

    def __post_init__(self) -> None:  # the work counts, before any catalog or model is read

        _check_work(restarts=self.restarts, **({} if self.steps is None else {"steps": self.steps}))


@dataclass(frozen=True)
class Optimized:
    """The solver's result (score, baselines, trajectory), the chosen submission, and the registry that names
    its models' layers in the live form (None when no registry was given)."""

    result: SolverResult
    submission: AlignSubmission
    registry: ModelRegistry | None


def _subset(names: list[str], chosen, what: str, path=None) -> list[int]:
    index = {n: i for i, n in enumerate(names)}
    out = []
    for n in chosen:
        if n not in index:
            close = closest(n, names)
            hint = f" Did you mean {close!r}?" if close else ""
            raise InputError(f"model {n!r} is not in the {what}.{hint}", path=path, field="models")
        out.append(index[n])
    return out


def _embedded(registry: ModelRegistry | None, catalog: StimulusCatalog | None, models, options: OptimizeOptions
              ) -> AlignData:
    if registry is None or catalog is None:
        raise InputError("optimising from the registry's models needs the registry and the catalog "
                         "(or a stored CKA matrix for Blue, stored embeddings for Red)")
    cache = options.cache_dir if options.cache_dir is not None else default_cache_dir()
    return AlignData.compute(registry, catalog, models, cache, options.batch_size, progress=options.progress)


def _blue(options: OptimizeOptions, registry, catalog, models, cka_matrix, compare, compare_source) -> Optimized:
    layers = None
    if cka_matrix is not None:
        names, C, mlayers = load_cka_matrix(cka_matrix)
        if models:
            idx = _subset(names, models, "CKA matrix", cka_matrix)
            names, C = [names[i] for i in idx], C[np.ix_(idx, idx)]
            mlayers = None if mlayers is None else [mlayers[i] for i in idx]
        layers = dict(zip(names, mlayers)) if mlayers is not None else None
    else:
        data = _embedded(registry, catalog, models, options)
        names, C = data.names(), data.matrix(unbiased=options.unbiased)
    steps = DEFAULT_STEPS[Team.BLUE] if options.steps is None else options.steps
    res = optimize_blue(C, options.size, names, restarts=options.restarts, seed=options.seed, steps=steps)
    if compare is not None:
        res.baselines["compare"] = blue_objective(C, _subset(names, compare.models, "models searched",
                                                             compare_source))
    # the layers stored with a matrix are those it was computed with (`align matrix` writes the registry's):
    # the live form names them; the draft form, which always means the registry's layer, leaves them out
    live = options.form is SubmissionForm.LIVE
    sub = AlignSubmission(Team.BLUE, models=tuple(res.selection),
                          layers=tuple(layers[n] for n in res.selection) if layers and live else ())
    return Optimized(res, sub, registry)


def _red(options: OptimizeOptions, registry, catalog, models, embeddings, compare, compare_source) -> Optimized:
    if embeddings is not None:
        _, feats, stimuli, _ = load_embeddings(embeddings, models)
    else:
        data = _embedded(registry, catalog, models, options)
        feats, stimuli = list(data.features.values()), list(data.catalog)
    steps = DEFAULT_STEPS[Team.RED] if options.steps is None else options.steps
    res = optimize_red(feats, options.size, pool=options.pool, steps=steps, seed=options.seed,
                       progress=options.progress)
    if compare is not None:
        index = {s.key: i for i, s in enumerate(stimuli)}
        missing = [s for s in compare.stimuli if s.key not in index]
        if missing:
            raise InputError(f"stimulus {missing[0].dataset_name}/{missing[0].image_identifier} is not among "
                             f"the embedded stimuli", path=compare_source)
        res.baselines["compare"] = red_objective(feats, [index[s.key] for s in compare.stimuli])
    sub = AlignSubmission(Team.RED, stimuli=tuple(stimuli[i] for i in res.selection))
    return Optimized(res, sub, registry)


def optimize_submission(team: Team, options: OptimizeOptions, *, registry: ModelRegistry | None = None,
                        catalog: StimulusCatalog | None = None, models: Sequence[str] | None = None,
                        cka_matrix: str | os.PathLike | None = None, embeddings: str | os.PathLike | None = None,
                        compare: AlignSubmission | str | os.PathLike | None = None) -> Optimized:
    """Search a Blue (models) or Red (stimuli) submission of ``options.size`` members.

    Blue reads the CKA matrix file ``cka_matrix`` when given (its stored layers go into a live submission),
    else embeds ``models`` (default: all of the registry's) on the catalog. Red reads the embeddings folder
    ``embeddings`` when given, else embeds the registry's models on the catalog. ``compare``: a submission
    (or its file) of the same team whose objective is reported as the baseline ``"compare"``. ``registry``
    is returned with the result: it names the layers when the submission is written in the live form."""
    team = Team(team)
    if team is Team.RED and options.unbiased:
        raise InputError("unbiased: the Red solver's incremental updates are for biased HSIC; score the "
                         "result with unbiased CKA instead ('modelseek align score --unbiased')")
    if cka_matrix is not None and team is not Team.BLUE:
        raise InputError("a CKA matrix is for the Blue team (Red needs per-stimulus embeddings)")
    if embeddings is not None and team is not Team.RED:
        raise InputError("stored embeddings are for the Red team (Blue takes a CKA matrix)")
    compare_source = None
    if compare is not None and not isinstance(compare, AlignSubmission):
        compare_source, compare = compare, load_align_submission(compare)
    if compare is not None and compare.team is not team:
        raise InputError(f"is a {compare.team.value} submission, not {team.value}", path=compare_source,
                         field="team")
    if team is Team.BLUE:
        return _blue(options, registry, catalog, models, cka_matrix, compare, compare_source)
    return _red(options, registry, catalog, models, embeddings, compare, compare_source)
