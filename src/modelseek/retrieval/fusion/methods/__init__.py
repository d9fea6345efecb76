"""Fusion methods: one registered :class:`FusionMethod` per file of this package, with its properties, its
combine function and the part of the learned-fusion search space it contributes, in one place.

A method is a :class:`FusionMethod` passed to ``register("fusion method", ...)``
(:func:`modelseek.core.kinds.register`) in
its own module here (``rrf.py``, ``combsum.py``, ...); the registry discovers the package's modules on first use, so a
new method is one file: ``fuse(..., method=NAME)``, ``modelseek fuse --method NAME`` and the optimiser's grid
(:func:`modelseek.retrieval.fusion.learned.candidate_fusions`, built from every method's :attr:`FusionMethod.search`)
take it at
once.

The contract (:class:`FusionMethod`):

* ``uses_scores``: the method sees each run's *normalised scores* (a normalisation applies, default min-max);
  otherwise it sees *reciprocal ranks* ``1 / (k + p_r(d))`` (RRF's ``k``; no normalisation applies).
* ``takes_weights``: it accepts one weight per run (otherwise the weights are 1).
* ``combine(values, weights) -> fused``: ``values`` is ``R x T x D`` (NaN where a run lacks a candidate: such
  a candidate adds nothing from that run), ``weights`` has one entry per run (``R``) or, for a fusion whose
  weights differ per task (a gated fusion, :mod:`modelseek.retrieval.fusion.gates`), one per run and topic (``R x T``);
  :func:`weighted_terms` takes both. The result is ``T x D`` (the caller drops candidates no run holds). It
  must not depend on the order of the runs nor on the shape of the block (see :func:`ordered_sum`).
* ``search(space) -> [(phase, Fusion), ...]``: the specifications this method adds to the optimiser's grid;
  the grid is ordered by phase (0: no weights, 1: weighted sums of scores, 2: weighted rank fusions), then by
  method name order of registration, then as yielded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ....core.errors import InputError
from ....core.registry import PluginRegistry, closest
from ....core.kinds import named, takes

if TYPE_CHECKING:
    from ..core import Fusion
    from ..norms import Norm


@dataclass(frozen=True)
class SearchSpace:
    """What the optimiser searches over (see :func:`modelseek.retrieval.fusion.learned.candidate_fusions`)."""

    run_ids: tuple[str, ...]
    norms: tuple[Norm, ...]
    #: weight vectors: equal weights first, then every single run, then the simplex grid (deduplicated)
    weights: tuple[tuple[float, ...], ...]
    rrf_ks: tuple[float, ...]
    #: builds one fusion of these runs: ``(method, norm, weights, k) -> Fusion`` (given by the optimiser, which
    #: knows :class:`~modelseek.retrieval.fusion.core.Fusion`; this package is imported by ``core`` and never imports
    # it)
    make: Callable[[str, Norm | str | None, Sequence[float] | None, float | None], Fusion] = field(
        compare=False, repr=False, default=None)  # type: ignore[assignment]

    @property
    def equal(self) -> tuple[float, ...]:
        return self.weights[0]

    @property
    def several_runs(self) -> bool:
        return len(self.run_ids) > 1

    def build(self, method: str, norm: Norm | str | None = None, weights: Sequence[float] | None = None,
              k: float | None = None) -> Fusion:
        if self.make is None:
            raise TypeError("SearchSpace.make is not set: build search spaces with modelseek.retrieval.fusion.learned."
                            "candidate_fusions")
        return self.make(method, norm, weights, k)


class Combine(Protocol):
    def __call__(self, values: np.ndarray, weights: np.ndarray) -> np.ndarray: ...


class Search(Protocol):
    def __call__(self, space: SearchSpace) -> Sequence[tuple[int, Fusion]]: ...


class _Methods(type):
    """Iterating :class:`FusionMethod` itself lists the registered methods (as iterating an enum would)."""

    def __iter__(cls) -> Iterator[FusionMethod]:
        """The usable methods (:func:`usable_methods`): a broken plugin is left out, never raised here."""
        return iter(usable_methods()[0])

    def __len__(cls) -> int:
        return len(FUSION_METHODS.names())

    def __getattr__(cls, attr: str) -> FusionMethod:
        """``FusionMethod.RRF``: a registered method by its name in capitals (as the enum had them)."""
        if attr.isupper() and attr.lower() in FUSION_METHODS:
            return FUSION_METHODS.get(attr.lower())
        raise AttributeError(attr)


@dataclass(frozen=True, eq=False, repr=False)
class FusionMethod(metaclass=_Methods):
    """A fusion method and its properties (see the module docstring for the contract)."""

    value: str
    summary: str
    uses_scores: bool
    takes_weights: bool
    combine: Combine = field(compare=False)
    search: Search = field(compare=False)

    # a method is known by its name: equal, hashed and printed as it
    def __eq__(self, other: object) -> bool:
        return isinstance(other, FusionMethod) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("fusion-method", self.value))

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        return f"FusionMethod({self.value!r})"

    @property
    def name(self) -> str:
        return self.value

    @classmethod
    def values(cls) -> list[str]:
        return FUSION_METHODS.names()

    @classmethod
    def parse(cls, value: str | FusionMethod, field: str | None = None) -> FusionMethod:
        """The registered method named ``value`` (case and spaces ignored); else an ``InputError`` with a
        did-you-mean and the valid values."""
        if isinstance(value, FusionMethod):
            return value
        text = str(value).strip().lower()
        if text in FUSION_METHODS:
            return FUSION_METHODS.get(text)
        close = closest(text, cls.values())
        hint = f" (did you mean {close!r}?)" if close else ""
        raise InputError(f"unknown fusion method {value!r}{hint}; valid values: {', '.join(cls.values())}",
                         field=field)


_BUILTIN = ("rrf", "combsum", "combmnz", "wsum")
#: registered fusion methods in registration order (the built-ins first, in the order of the search grid's
#: documentation); the package's modules are imported on first use
FUSION_METHODS: PluginRegistry[FusionMethod] = PluginRegistry("fusion method", __name__, first=_BUILTIN,
                                                              ordered=True)


def check_fusion_method(name: str, obj: object) -> FusionMethod:
    """The fusion kind's one check (:data:`modelseek.core.kinds.KINDS`), run when it registers and on every plugin: a
    :class:`FusionMethod` named ``name`` (lower case, no spaces), with boolean properties, ``combine(values,
    weights)`` and ``search(space)``."""

    if not isinstance(obj, FusionMethod):
        raise TypeError(f"a fusion method is a FusionMethod instance, got {obj!r}")
    if obj.value != obj.value.strip().lower() or " " in obj.value:
        raise ValueError(f"a fusion method's name is lower case without spaces, got {obj.value!r}")
    named("the fusion method", obj.value, name)
    for attr in ("uses_scores", "takes_weights"):
        if not isinstance(getattr(obj, attr), bool):
            raise TypeError(f"fusion method {name!r}: {attr} must be True or False")
    takes(f"fusion method {name!r}: combine", obj.combine, ("values", "weights"), bound=True)
    takes(f"fusion method {name!r}: search", obj.search, ("space",), bound=True)
    return obj


def builtin(name: str) -> FusionMethod:
    """The built-in method ``name``, also where a plugin's entry point of the same name clashes with it: for the
    package's own uses of a built-in that no user named (plain RRF as the optimiser's baseline)
    (:meth:`modelseek.core.registry.Registry.builtin`)."""
    return FUSION_METHODS.builtin(name)


def usable_methods() -> tuple[list[FusionMethod], dict[str, str]]:
    """(every method a whole-registry use such as the optimiser's search can take, in registration order: the
    built-ins and each plugin that loads and passes the check; {name: why} of the plugin members left out, each
    why one line naming the entry point and distribution). A broken plugin fails alone: it is left out here and
    only a command that names it fails (:meth:`modelseek.core.registry.Registry.usable`)."""
    members, left = FUSION_METHODS.usable()
    return list(members.values()), left


def ordered_sum(terms: np.ndarray) -> np.ndarray:
    """``terms`` (``R x ...``) summed over the first axis in increasing order, so that the result depends neither
    on the shape of the block nor on the order of the runs (floating-point addition is not associative)."""
    acc = np.zeros(terms.shape[1:])
    for term in np.sort(terms, axis=0):
        acc = acc + term
    return acc


def weighted_terms(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``w_r v_r(d)`` per run, 0 where the run lacks the candidate; ``weights`` is ``R`` or ``R x T`` (a weight
    per run and topic, broadcast over the topic's candidates)."""
    v = np.where(np.isnan(values), 0.0, values)
    w = np.asarray(weights, dtype=float)
    if w.ndim == 2:
        return w.reshape(*w.shape, *([1] * (v.ndim - 2))) * v
    return np.array([float(x) * v[r] for r, x in enumerate(w)]).reshape(-1, *v.shape[1:])


__all__ = ["FUSION_METHODS", "FusionMethod", "SearchSpace", "builtin", "check_fusion_method", "ordered_sum",
           "usable_methods", "weighted_terms"]
