"""Style descriptors: one vector per image, computed without training.

* ``hist`` — joint RGB colour histogram (8 bins per channel, L1-normalised): the classic colour baseline
  (Swain & Ballard, "Color indexing", IJCV 1991).
* ``colour`` — colour statistics: mean, standard deviation, skewness and 10/50/90th percentiles of R, G,
  B, H (as cos/sin of hue weighted by saturation), S and V; saturation-weighted hue histogram; S and V
  histograms; colourfulness (Hasler & Süsstrunk, 2003).
* ``gram`` — Gram matrices of the feature maps of several convolutional layers (the style representation of
  Gatys, Ecker & Bethge, "Image style transfer using CNNs", CVPR 2016). Random-weight networks keep much
  of this texture information (Ustyuzhaninov et al., "Texture synthesis using shallow convolutional
  networks with random filters", 2016), so the default backbone is a seeded random conv stack defined here.
  Each layer's upper triangle is compressed by a seeded Gaussian random projection
  (:class:`sklearn.random_projection.GaussianRandomProjection`) and L2-normalised per layer.
* ``moments`` — per-channel mean and standard deviation of the same feature maps (the statistics AdaIN
  transfers; Huang & Belongie, ICCV 2017), L2-normalised per layer.

Extractors are stateless: the vector of an image depends only on the image and the extractor's config, so
vectors are cached per image (:class:`FeatureCache`). Fitted compression (PCA) belongs to the retriever.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from ..progress import progress_bar
from ..registry import Registry
from .data import StyleDataset

EXTRACTORS: Registry[Callable[..., "Extractor"]] = Registry("style feature")


class Extractor:
    """Maps a batch of N x S x S x 3 uint8 images to an N x D float32 matrix."""

    name = "extractor"

    def config(self) -> dict[str, Any]:
        return {"name": self.name}

    def key(self) -> str:
        blob = json.dumps(self.config(), sort_keys=True)
        return f"{self.name}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"

    def __call__(self, images: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config()})"


# ----------------------------------------------------------------------------------------- colour
@EXTRACTORS.register("hist")
class ColourHistogram(Extractor):
    name = "hist"

    def __init__(self, bins: int = 8) -> None:
        self.bins = int(bins)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "bins": self.bins}

    def __call__(self, images: np.ndarray) -> np.ndarray:
        q = (images.astype(np.int64) * self.bins) // 256
        codes = (q[..., 0] * self.bins + q[..., 1]) * self.bins + q[..., 2]
        n = images.shape[0]
        out = np.zeros((n, self.bins ** 3), np.float32)
        for i in range(n):
            out[i] = np.bincount(codes[i].ravel(), minlength=self.bins ** 3)
        return out / out.sum(axis=1, keepdims=True)


def _rgb_to_hsv(x: np.ndarray) -> np.ndarray:
    from matplotlib.colors import rgb_to_hsv

    return rgb_to_hsv(x)


@EXTRACTORS.register("colour")
class ColourStats(Extractor):
    name = "colour"

    def __init__(self, hue_bins: int = 12, bins: int = 8) -> None:
        self.hue_bins, self.bins = int(hue_bins), int(bins)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "hue_bins": self.hue_bins, "bins": self.bins, "v": 1}

    def __call__(self, images: np.ndarray) -> np.ndarray:
        return np.stack([self._one(img) for img in images]).astype(np.float32)

    def _one(self, img: np.ndarray) -> np.ndarray:
        rgb = img.reshape(-1, 3).astype(np.float64) / 255.0
        hsv = _rgb_to_hsv(rgb)
        h, s, v = hsv[:, 0], hsv[:, 1], hsv[:, 2]
        chans = np.column_stack([rgb, s * np.cos(2 * np.pi * h), s * np.sin(2 * np.pi * h), s, v])
        mean = chans.mean(0)
        std = chans.std(0)
        skew = ((chans - mean) ** 3).mean(0) / np.maximum(std, 1e-6) ** 3
        pct = np.percentile(chans, [10, 50, 90], axis=0).ravel()
        hue_hist = np.bincount(np.minimum((h * self.hue_bins).astype(int), self.hue_bins - 1), weights=s,
                               minlength=self.hue_bins) / len(h)
        s_hist = np.histogram(s, bins=self.bins, range=(0, 1))[0] / len(s)
        v_hist = np.histogram(v, bins=self.bins, range=(0, 1))[0] / len(v)
        rg = rgb[:, 0] - rgb[:, 1]
        yb = 0.5 * (rgb[:, 0] + rgb[:, 1]) - rgb[:, 2]
        colourfulness = np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean())
        return np.concatenate([mean, std, np.clip(skew, -10, 10), pct, hue_hist, s_hist, v_hist, [colourfulness]])


# ----------------------------------------------------------------------------------------- CNN backbones
BACKBONES: Registry[Callable[..., Any]] = Registry("style backbone")


def random_cnn(channels: Sequence[int] = (32, 64, 128, 128), seed: int = 0):
    """A seeded random-weight conv stack: per stage 3x3 conv + ReLU, 2x2 average pooling between stages.

    Returns a callable ``(N x 3 x S x S float tensor) -> list of per-stage feature maps``. He-normal weights
    drawn from a ``torch.Generator`` seeded with ``seed``; biases zero.
    """
    import torch

    gen = torch.Generator().manual_seed(int(seed))
    weights = []
    c_in = 3
    for c in channels:
        w = torch.randn(int(c), c_in, 3, 3, generator=gen) * (2.0 / (c_in * 9)) ** 0.5
        weights.append(w)
        c_in = int(c)

    def forward(x):
        import torch.nn.functional as F

        maps = []
        for i, w in enumerate(weights):
            if i:
                x = F.avg_pool2d(x, 2)
            x = F.relu(F.conv2d(x, w, padding=1))
            maps.append(x)
        return maps

    return forward


BACKBONES.add("random-cnn", random_cnn)


def torchvision_backbone(arch: str = "vgg16", layers: Sequence[str] | None = None, seed: int = 0):
    """A random-init torchvision architecture (``weights=None``), feature maps read by forward hooks on the
    named modules (default: every ReLU after a conv stage boundary for VGG; ``layer1``..``layer4`` else)."""
    try:
        import torch
        import torchvision.models as tvm
    except Exception as exc:  # torchvision's compiled ops may not load beside this torch build
        raise InputError(f"torchvision backbone {arch!r} unavailable: {type(exc).__name__}: {exc}") from None
    with torch.random.fork_rng(devices=[]):  # torchvision initialises from the global generator
        torch.manual_seed(int(seed))
        try:
            model = tvm.get_model(arch, weights=None)
        except ValueError as exc:
            raise InputError(f"unknown torchvision architecture {arch!r}: {exc}") from None
    model.eval()
    modules = dict(model.named_modules())
    if layers is None:
        if "layer4" in modules:
            layers = ["layer1", "layer2", "layer3", "layer4"]
        else:
            feats = [n for n, m in modules.items() if type(m).__name__ == "ReLU" and n.startswith("features.")]
            layers = feats[:: max(1, len(feats) // 4)][:4]
    missing = [n for n in layers if n not in modules]
    if missing:
        raise InputError(f"{arch} has no module(s) {missing}; examples: {list(modules)[1:8]}")
    return _hooked(model, list(layers))


def _hooked(model, layers: list[str]):
    """Run ``model`` and return the outputs of the named modules (read by forward hooks)."""
    modules = dict(model.named_modules())

    def forward(x):
        store: dict[str, Any] = {}
        handles = [modules[n].register_forward_hook(lambda m, i, o, n=n: store.__setitem__(n, o)) for n in layers]
        try:
            model(x)
        finally:
            for h in handles:
                h.remove()
        return [store[n] for n in layers]

    return forward


BACKBONES.add("torchvision", torchvision_backbone)


def make_backbone(spec: str, seed: int = 0):
    """``random-cnn`` or ``torchvision:ARCH``."""
    kind, _, arg = spec.partition(":")
    fn = BACKBONES.get(kind)
    return fn(arg, seed=seed) if arg else fn(seed=seed)


class _CNNExtractor(Extractor):
    def __init__(self, backbone: str = "random-cnn", seed: int = 0, dims: int = 256) -> None:
        self.backbone, self.seed, self.dims = backbone, int(seed), int(dims)
        self._net = None
        self._proj: dict[int, Any] = {}

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "backbone": self.backbone, "seed": self.seed, "dims": self.dims, "v": 1}

    def _maps(self, images: np.ndarray):
        import torch

        if self._net is None:
            self._net = make_backbone(self.backbone, self.seed)
        x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0
        x = (x - 0.45) / 0.25
        with torch.no_grad():
            return self._net(x)


@EXTRACTORS.register("gram")
class GramFeatures(_CNNExtractor):
    name = "gram"

    def _project(self, layer: int, g: np.ndarray) -> np.ndarray:
        if g.shape[1] <= self.dims:
            return g
        if layer not in self._proj:
            from sklearn.random_projection import GaussianRandomProjection

            rp = GaussianRandomProjection(n_components=self.dims, random_state=self.seed + 1000 * layer)
            rp.fit(np.zeros((1, g.shape[1]), np.float32))
            self._proj[layer] = np.ascontiguousarray(rp.components_.T, dtype=np.float32)
        return g @ self._proj[layer]  # what rp.transform computes, kept in float32 (faster)

    def __call__(self, images: np.ndarray) -> np.ndarray:
        import torch

        blocks = []
        for li, f in enumerate(self._maps(images)):
            b, c, h, w = f.shape
            f = f.reshape(b, c, h * w)
            gram = torch.bmm(f, f.transpose(1, 2)) / (h * w)
            iu = torch.triu_indices(c, c)
            g = gram[:, iu[0], iu[1]].numpy().astype(np.float32)
            g = np.sign(g) * np.sqrt(np.abs(g))  # power normalisation tames the heavy tail of Gram entries
            g = self._project(li, g)
            blocks.append(g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-12))
        return np.concatenate(blocks, axis=1).astype(np.float32)


@EXTRACTORS.register("moments")
class ChannelMoments(_CNNExtractor):
    name = "moments"

    def __call__(self, images: np.ndarray) -> np.ndarray:
        blocks = []
        for f in self._maps(images):
            f = f.flatten(2)
            m = np.concatenate([f.mean(2).numpy(), f.std(2).numpy()], axis=1)
            blocks.append(m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12))
        return np.concatenate(blocks, axis=1).astype(np.float32)


def make_extractor(name: str, seed: int = 0, **params: Any) -> Extractor:
    """An extractor by name (``hist``, ``colour``, ``gram``, ``moments``, ...); ``seed`` where it takes one."""
    import inspect

    cls = EXTRACTORS.get(name)
    if "seed" in inspect.signature(cls).parameters:
        params.setdefault("seed", seed)
    return cls(**params)


# ----------------------------------------------------------------------------------------- cache
class FeatureCache:
    """One file per (extractor, image): ``DIR/<extractor key>/<sha256 of image key>.npy``.

    Written atomically; each file carries the SHA-256 of its payload and is verified on read, a corrupt
    or truncated file is recomputed.
    """

    MAGIC = b"MSFC1"

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, ext_key: str, item_key: str) -> Path:
        return self.root / ext_key / f"{hashlib.sha256(item_key.encode()).hexdigest()}.npy"

    def get(self, ext_key: str, item_key: str) -> np.ndarray | None:
        p = self._path(ext_key, item_key)
        try:
            data = p.read_bytes()
        except OSError:
            return None
        head = len(self.MAGIC) + 32
        if len(data) < head or data[: len(self.MAGIC)] != self.MAGIC:
            return None
        payload = data[head:]
        if hashlib.sha256(payload).digest() != data[len(self.MAGIC):head]:
            return None
        try:
            return np.load(io.BytesIO(payload), allow_pickle=False)
        except ValueError:
            return None

    def put(self, ext_key: str, item_key: str, vec: np.ndarray) -> None:
        from ..io import atomic_write_bytes

        buf = io.BytesIO()
        np.save(buf, np.asarray(vec), allow_pickle=False)
        payload = buf.getvalue()
        atomic_write_bytes(self._path(ext_key, item_key), self.MAGIC + hashlib.sha256(payload).digest() + payload)


def extract(dataset: StyleDataset, extractor: Extractor, size: int = 128, batch_size: int = 32,
            cache: FeatureCache | str | Path | None = None, progress: bool = False) -> np.ndarray:
    """Features of every image of ``dataset`` (N x D float32), images resized to ``size`` x ``size``.

    With ``cache``, vectors found there are reused and each finished batch is written, so an interrupted
    extraction resumes where it stopped.
    """
    if size < 8:
        raise InputError(f"image size must be at least 8, got {size}", field="size")
    if cache is not None and not isinstance(cache, FeatureCache):
        cache = FeatureCache(cache)
    ext_key = f"{extractor.key()}-s{int(size)}"
    n = len(dataset)
    rows: list[np.ndarray | None] = [None] * n
    keys = [dataset.key(i) for i in range(n)] if cache is not None else []
    todo = list(range(n))
    if cache is not None:
        todo = []
        for i in range(n):
            v = cache.get(ext_key, keys[i])
            if v is None:
                todo.append(i)
            else:
                rows[i] = v
    batches = [todo[j:j + batch_size] for j in range(0, len(todo), batch_size)]
    for batch in progress_bar(batches, desc=f"{extractor.name} features", disable=not progress):
        imgs = np.stack([dataset.image(i, size) for i in batch])
        feats = np.asarray(extractor(imgs), dtype=np.float32)
        for i, v in zip(batch, feats):
            rows[i] = v
            if cache is not None:
                cache.put(ext_key, keys[i], v)
    if n == 0:
        raise InputError("no images")
    out = np.stack(rows).astype(np.float32)
    if not np.isfinite(out).all():
        bad = int(np.where(~np.isfinite(out).all(axis=1))[0][0])
        raise InputError(f"non-finite {extractor.name} features for image {dataset.ids[bad]!r}")
    return out
