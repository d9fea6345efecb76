"""Deep validation of Re-Align models: build each model a Blue submission names (with its ``layer_name``s), or
every model of the registry, run one dummy batch, and say in which file each problem is to be fixed."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..core.errors import InputError, ValidationError
from ..core.progress import progress_bar
from .formats import AlignSubmission, ModelRegistry, Team
from ..retrieval.vision.models import EntryCheck, check_entry


def deep_check(registry: ModelRegistry, sub: AlignSubmission | None = None, *, random_fallback: bool = True,
               progress: bool = False) -> list[EntryCheck]:
    """Check the models of a Blue submission (each with the layer it names, else the registry's), or every
    registry model when there is no Blue submission (a Red one names no model). Problems are in the results
    (:func:`raise_for_checks` turns them into located errors); random weights are used, and said, where the
    pretrained ones cannot be fetched and ``random_fallback`` allows it."""
    entries = sub.entries(registry) if sub is not None and sub.team is Team.BLUE else list(registry)
    return [check_entry(e, random_fallback=random_fallback)
            for e in progress_bar(entries, desc="build models", disable=not progress or len(entries) < 2)]


def raise_for_checks(checks: Sequence[EntryCheck], registry: ModelRegistry, sub: AlignSubmission | None = None,
                     source: str | os.PathLike | None = None) -> None:
    """Raise a :class:`ValidationError` for the failed checks of :func:`deep_check`, each located in the file to
    edit: a layer that the submission (file ``source``) names is the submission's ``models[i].layer_name``;
    any other layer, and every output width, is the registry's (``layer``, ``output_dim``)."""
    bad = [(i, c) for i, c in enumerate(checks) if not c.ok]
    if not bad:
        return
    named = sub.layer_of if sub is not None and sub.team is Team.BLUE else (lambda i: None)
    from_sub = {i for i, c in bad if named(i) is not None and "output_dim" not in c.problem}
    problems = [InputError(c.problem, path=source, field=f"models[{i}].layer_name") if i in from_sub
                else InputError(c.problem, path=registry.path,
                                field="layer" if "output_dim" not in c.problem else "output_dim")
                for i, c in bad]
    where = (source or "submission") if len(from_sub) == len(bad) else registry.path or "registry"
    raise ValidationError(where, problems)
