"""The organisers' Subtask B baseline as a ``rank-style`` method: fine-tune an ImageNet CNN as a classifier
over the candidate models and rank the models of each image by its logits.

Their ``notebooks/baseline.ipynb`` takes torchvision's ResNet-50 with ``IMAGENET1K_V2`` weights, replaces
its classifier by dropout (p = 0.2) and a linear layer over the 85 models, feeds 224-px images normalised
with the ImageNet mean and standard deviation, trains with cross-entropy and Adam (lr 1e-4) for 5 epochs in
batches of 256 with seed 42, and ranks the models by the logits. ``resnet50-finetune`` follows those steps;
options after ``@`` (comma-separated ``key=value`` or a flag) change them::

    resnet50-finetune                      the organisers' steps
    resnet50-finetune@frozen,epochs=20     CPU option: the backbone frozen (its pooled features computed once
                                           per image and cached like any style feature), only the head trained
    resnet50-finetune@epochs=1             CPU option: fewer epochs
    tiny-finetune@weights=random           a seeded two-stage conv net: the same steps in seconds (tests)

Fields: ``weights`` (``imagenet``: IMAGENET1K_V2 for resnet50, the architecture's default ImageNet weights
otherwise; ``random``: seeded initialisation), ``epochs``, ``batch``, ``lr``, ``dropout``, ``size``,
``seed``, ``frozen``. Any torchvision classification architecture with an ``fc`` head may stand before
``-finetune`` (resnet18, resnet50, wide_resnet50_2, ...). Offline, ImageNet weights that are not in torch's
cache are the alignment loader's one-line error (``pretrained weights ... cannot be fetched``).

Training runs under :func:`torch.random.fork_rng` seeded with ``seed``: the same run twice gives the same
logits and the caller's random state is untouched.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np

from ..retrieval.vision.sources.base import WeightsUnavailable, _first_line, offline, offline_reason
from ..core.config import Config, Interval
from ..core.errors import InputError
from ..core.progress import progress_counter
from ..core.registry import closest
from .descriptors import Extractor, extract_many

if TYPE_CHECKING:
    import torch

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: the weights the organisers' notebook loads, per architecture (others: the architecture's DEFAULT)
ORGANISER_WEIGHTS = {"resnet50": "IMAGENET1K_V2"}


@dataclass(frozen=True)
class FineTune(Config):
    """The steps of the organisers' baseline (defaults = their notebook)."""

    arch: str = "resnet50"
    weights: str = "imagenet"
    epochs: int = 5
    batch: int = 256
    lr: float = 1e-4
    dropout: float = 0.2
    size: int = 224
    seed: int = 42
    frozen: bool = False
    _constraints = {
        "epochs": [Interval(Integral, 1, 1000, closed="both")],
        "batch": [Interval(Integral, 1, 65536, closed="both")],
        "lr": [Interval(Real, 0, 10, closed="right")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "size": [Interval(Integral, 16, 1024, closed="both")],
        "seed": [Interval(Integral, 0, 2**32 - 1, closed="both")],
    }

    def _check(self) -> None:
        if self.weights not in ("imagenet", "random"):
            raise InputError(f"must be imagenet or random, got {self.weights!r}", field="weights")


def parse_finetune(name: str, arch: str, options: str) -> FineTune:
    """``resnet50`` and ``frozen,epochs=2`` -> :class:`FineTune` (errors name the method)."""
    params: dict[str, Any] = {"arch": arch}
    for opt in (o.strip() for o in options.split(",") if o.strip()):
        key, eq, value = opt.partition("=")
        params[key.strip()] = value.strip() if eq else "true"
    if "arch" in params and params["arch"] != arch:
        raise InputError(f"method {name!r}: the architecture is named before -finetune", field="method")
    try:
        return FineTune.from_mapping(params)
    except InputError as exc:
        raise InputError(f"method {name!r}: {exc.message}", field=exc.field) from None


# ----------------------------------------------------------------------------------------------- networks
class _Tiny:
    """Builds a two-stage conv net with an ``fc`` head (for tests: the baseline's steps in seconds)."""

    @staticmethod
    def build():
        import torch.nn as nn  # lazy: torch

        class Tiny(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                              nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                                              nn.AdaptiveAvgPool2d(1), nn.Flatten())
                self.fc = nn.Linear(16, 1000)

            def forward(self, x):
                return self.fc(self.features(x))

        return Tiny()


def build_backbone(cfg: FineTune):
    """The network with its ImageNet head (weights loaded or seeded); offline without cached weights: the
    alignment loader's :class:`~modelseek.retrieval.vision.sources.WeightsUnavailable`."""
    import importlib

    for name in ("torch",) if cfg.arch == "tiny" else ("torch", "torchvision.models"):
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - ImportError or a broken binary build
            raise InputError(f"the fine-tuned baseline needs {name.split('.')[0]} ({type(exc).__name__}: {exc}); "
                             f"install it (pip install 'modelseek[align-zoo]')", field="method") from None
    import torch  # lazy: torch

    if cfg.arch == "tiny":
        if cfg.weights != "random":
            raise InputError("the tiny network has no ImageNet weights; use tiny-finetune@weights=random",
                             field="weights")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            return _Tiny.build()
    import torchvision.models as tvm  # lazy: torchvision

    if cfg.arch not in tvm.list_models(module=tvm):
        close = closest(cfg.arch, tvm.list_models(module=tvm))
        raise InputError(f"unknown torchvision architecture {cfg.arch!r}" + (f"; did you mean {close!r}?" if close
                                                                                else ""), field="method")
    if cfg.weights == "random":
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            net = tvm.get_model(cfg.arch, weights=None)
    else:
        from urllib.parse import urlparse

        enum = tvm.get_model_weights(cfg.arch)
        w = enum[ORGANISER_WEIGHTS[cfg.arch]] if cfg.arch in ORGANISER_WEIGHTS else enum.DEFAULT
        cached = os.path.join(torch.hub.get_dir(), "checkpoints", os.path.basename(urlparse(w.url).path))
        if not os.path.isfile(cached) and offline(urlparse(w.url).hostname or "download.pytorch.org"):
            raise WeightsUnavailable(f"model {cfg.arch!r}: pretrained weights {w} cannot be fetched: "
                                     f"{offline_reason()} and not in {os.path.dirname(cached)}", field="weights")
        try:
            net = tvm.get_model(cfg.arch, weights=w)
        except (OSError, RuntimeError) as exc:
            raise WeightsUnavailable(f"model {cfg.arch!r}: pretrained weights {w} cannot be fetched: "
                                     f"{_first_line(exc)}", field="weights") from None
    if not hasattr(net, "fc") or not hasattr(net.fc, "in_features"):
        raise InputError(f"architecture {cfg.arch!r} has no fc classifier to replace", field="method")
    return net


def _normalise(batch_uint8):
    import torch  # lazy: torch

    x = torch.from_numpy(np.ascontiguousarray(batch_uint8)).permute(0, 3, 1, 2).float() / 255.0
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    return (x - mean) / std


class BackboneFeatures(Extractor):
    """The frozen backbone's pooled features (its ``fc`` input), an extractor of the style pipeline (so that
    they are streamed and cached per file like any style feature)."""

    name = "backbone"

    def __init__(self, cfg: FineTune) -> None:
        self.cfg = cfg
        self._net: torch.nn.Module | None = None

    def key(self) -> str:
        import hashlib

        blob = f"{self.cfg.arch}|{self.cfg.weights}|{self.cfg.seed if self.cfg.weights == 'random' else ''}|v1"
        return f"backbone-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"

    def __call__(self, images: np.ndarray) -> np.ndarray:
        import torch  # lazy: torch

        if self._net is None:
            net = build_backbone(self.cfg)
            net.fc = torch.nn.Identity()
            self._net = net.eval()
        with torch.no_grad():
            return self._net(_normalise(images)).numpy()


# ----------------------------------------------------------------------------------------------- training
def _head(in_features: int, n_classes: int, dropout: float):
    import torch.nn as nn  # lazy: torch

    return nn.Sequential(nn.Dropout(dropout), nn.Linear(in_features, n_classes))


def _train(module, inputs, y: np.ndarray, cfg: FineTune, params, prepare) -> None:
    """Cross-entropy, Adam(lr), ``epochs`` passes in shuffled batches of ``batch`` (a seeded generator)."""
    import torch  # lazy: torch

    opt = torch.optim.Adam(params, lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    target = torch.from_numpy(y.astype(np.int64))
    loss_fn = torch.nn.CrossEntropyLoss()
    module.train()
    for _ in range(cfg.epochs):
        order = torch.randperm(len(y), generator=gen).numpy()
        for j in range(0, len(y), cfg.batch):
            idx = order[j:j + cfg.batch]
            opt.zero_grad()
            loss = loss_fn(module(prepare(inputs, idx)), target[idx])
            if not torch.isfinite(loss):
                raise InputError(f"training diverged (loss {float(loss)}); lower lr (now {cfg.lr})", field="lr")
            loss.backward()
            opt.step()
    module.eval()


def _logits(module, inputs, n: int, batch: int, prepare) -> np.ndarray:
    import torch  # lazy: torch

    out = []
    with torch.no_grad():
        for j in range(0, n, batch):
            out.append(module(prepare(inputs, np.arange(j, min(n, j + batch)))).numpy())
    return np.concatenate(out).astype(np.float64)


def finetune_scores(cfg: FineTune, train_bank, train_idx: Sequence[int] | np.ndarray, test_bank,
                    test_idx: Sequence[int] | np.ndarray, labels: Sequence[str], models: Sequence[str]) -> np.ndarray:
    """Fit the baseline on rows ``train_idx`` of ``train_bank``'s images and return the logits of rows
    ``test_idx`` of ``test_bank`` over ``models`` (models without training images: below every other)."""
    import torch  # lazy: torch

    train_idx, test_idx = [int(i) for i in train_idx], [int(i) for i in test_idx]
    y_all = [str(labels[i]) for i in train_idx]
    seen = [m for m in models if m in set(y_all)]
    if len(seen) < 2:
        raise InputError(f"need training images of at least 2 models, got {len(seen)}")
    code = {m: k for k, m in enumerate(seen)}
    y = np.array([code[v] for v in y_all])

    def pixels(bank):
        """The bank's images at the config's size, decoded once and held (uint8) for the fine-tuning."""
        key = ("pixels", cfg.size)
        if key not in bank._extra:
            bank._extra[key] = _load_pixels(bank.dataset, cfg.size, bank.progress)
        return bank._extra[key]

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        if cfg.frozen:
            ext = BackboneFeatures(cfg)

            def feats(bank):
                key = ("backbone", ext.key(), cfg.size)
                if key not in bank._extra:
                    bank._extra[key] = extract_many(bank.dataset, [ext], size=cfg.size, batch_size=32,
                                                    cache=bank.cache, progress=bank.progress)[0]
                return bank._extra[key]

            Xtr, Xte = feats(train_bank)[train_idx], feats(test_bank)[test_idx]
            head = _head(Xtr.shape[1], len(seen), cfg.dropout)

            def prep(X, idx):
                return torch.from_numpy(np.ascontiguousarray(X[idx], dtype=np.float32))

            _train(head, Xtr, y, cfg, head.parameters(), prep)
            logits = _logits(head, Xte, len(test_idx), cfg.batch, prep)
        else:
            net = build_backbone(cfg)
            net.fc = _head(net.fc.in_features, len(seen), cfg.dropout)
            Ptr, Pte = pixels(train_bank), pixels(test_bank)

            def prep_tr(P, idx):
                return _normalise(P[np.asarray(train_idx)[idx]])

            def prep_te(P, idx):
                return _normalise(P[np.asarray(test_idx)[idx]])

            _train(net, Ptr, y, cfg, net.parameters(), prep_tr)
            logits = _logits(net, Pte, len(test_idx), cfg.batch, prep_te)
    if not np.isfinite(logits).all():
        raise InputError("the fine-tuned network gave non-finite logits; lower lr", field="lr")
    out = np.empty((len(test_idx), len(models)))
    out[:] = logits.min(axis=1, keepdims=True) - 1.0
    col = {m: j for j, m in enumerate(models)}
    for k, m in enumerate(seen):
        out[:, col[m]] = logits[:, k]
    return out


def _load_pixels(dataset, size: int, progress: bool) -> np.ndarray:
    """Every image at ``size`` x ``size`` (uint8), read ahead by threads (see :func:`extract_many`)."""
    from concurrent.futures import ThreadPoolExecutor

    out = np.empty((len(dataset), size, size, 3), np.uint8)
    bar = None
    if progress:
        bar = progress_counter(len(dataset), desc=f"images at {size} px")
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            for i, img in enumerate(pool.map(lambda k: dataset.image(k, size), range(len(dataset)))):
                out[i] = img
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return out
