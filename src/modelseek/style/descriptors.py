"""Style descriptors: one vector per image, computed without training.

* ``hist`` -- joint RGB colour histogram (8 bins per channel, L1-normalised): the classic colour baseline
  (Swain & Ballard, "Color indexing", IJCV 1991).
* ``colour`` -- colour statistics: mean, standard deviation, skewness and 10/50/90th percentiles of R, G,
  B, saturation-weighted hue (cos, sin), S and V; saturation-weighted hue histogram; S and V histograms;
  colourfulness (Hasler & Suesstrunk, 2003).
* ``texture`` -- pixel-level texture statistics after Portilla & Simoncelli (band-pass pyramid moments,
  autocorrelation, cross-channel correlation, orientation histogram); see :class:`TextureStats`.
* ``gram`` -- Gram matrices of the feature maps of several convolutional layers (the style representation of
  Gatys, Ecker & Bethge, "Image style transfer using CNNs", CVPR 2016). Random-weight networks keep much
  of this texture information (Ustyuzhaninov et al., "Texture synthesis using shallow convolutional
  networks with random filters", 2016), so the default backbone is a seeded random conv stack defined here.
  Each layer's upper triangle is compressed by a seeded Gaussian random projection
  (:class:`sklearn.random_projection.GaussianRandomProjection`) and L2-normalised per layer.
* ``moments`` -- per-channel mean and standard deviation of the same feature maps (the statistics AdaIN
  transfers; Huang & Belongie, ICCV 2017), L2-normalised per layer.
* ``enc:NAME`` / ``encgram:NAME`` -- any image encoder of the alignment model registry
  (:mod:`modelseek.align`: torchvision, timm, open_clip, transformers or custom architectures, pretrained
  or seeded random init), loaded and hooked by the align code: its embedding, or the Gram matrix of its
  hooked layer.

Extractors are stateless: the vector of an image depends only on the image and the extractor's config, so
vectors are cached per image (see :func:`extract`). Fitted compression (PCA) belongs to the retriever.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..retrieval.vision.entries import ModelRegistry
from ..retrieval.vision.models import _first_tensor, _run_hooked, embed_images, load_model, preprocess_images
from ..core.config import Config, Interval, Source
from ..core.errors import InputError
from ..retrieval.features.cache import FeatureCache, cache_key
from ..core.progress import progress_counter
from ..core.registry import Registry
from . import images as imgio
from .data import StyleDataset
from ..core.kinds import named, overrides, register, takes

if TYPE_CHECKING:
    from ..retrieval.vision.sources import LoadedModel

EXTRACTORS: Registry[type[Extractor]] = Registry("style feature")
"""Every style feature: the extractors below, then the entry points of ``modelseek.style_features`` (checked by
:func:`check_extractor`)."""


def check_extractor(name: str, obj: object) -> type[Extractor]:
    """The style-feature kind's one check (:data:`modelseek.core.kinds.KINDS`): an :class:`Extractor` subclass whose
    ``name`` is ``name``, with ``__call__(images)`` implemented and ``Params`` a
    :class:`~modelseek.core.config.Config`."""

    if not (isinstance(obj, type) and issubclass(obj, Extractor)):
        raise TypeError(f"a style feature is an Extractor subclass (modelseek.style.descriptors), got {obj!r}")
    named(f"style feature {obj.__name__}", obj.name, name)
    if not overrides(obj, Extractor, "__call__"):
        raise TypeError(f"style feature {obj.__name__} does not implement __call__(images)")
    takes(f"{obj.__name__}.__call__", obj.__call__, ("images",))
    if not (isinstance(obj.Params, type) and issubclass(obj.Params, Config)):
        raise TypeError(f"style feature {obj.__name__}: Params must be a modelseek.core.config.Config subclass")
    return obj


def _ints(low: int, high: int | None = None) -> list:
    return [Interval(Integral, low, high, closed="both" if high is not None else "left")]


_SEED = _ints(0, 2**32 - 1)


@dataclass(frozen=True)
class NoParams(Config):
    """An extractor without parameters."""


class Extractor:
    """Maps a batch of N x S x S x 3 uint8 images to an N x D float32 matrix.

    ``Params`` is the extractor's config (:mod:`modelseek.core.config`): :func:`make_extractor` builds it from
    user-given parameters (unknown names with "did you mean", declared ranges) before the constructor runs.
    """

    name = "extractor"
    Params: ClassVar[type[Config]] = NoParams

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
@register("style feature", name="hist")
class ColourHistogram(Extractor):
    name = "hist"

    @dataclass(frozen=True)
    class Params(Config):
        bins: int = 8
        _constraints = {"bins": _ints(2, 64)}

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
    from matplotlib.colors import rgb_to_hsv  # lazy: matplotlib

    return rgb_to_hsv(x)


@register("style feature", name="colour")
class ColourStats(Extractor):
    name = "colour"

    @dataclass(frozen=True)
    class Params(Config):
        hue_bins: int = 12
        bins: int = 8
        _constraints = {"hue_bins": _ints(2, 360), "bins": _ints(2, 256)}

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
        d = chans - mean
        skew = (d * d * d).mean(0) / np.maximum(std, 1e-6) ** 3  # d*d*d: exact powers, 10x faster than pow
        pct = np.percentile(chans, [10, 50, 90], axis=0).ravel()
        hue_hist = np.bincount(np.minimum((h * self.hue_bins).astype(int), self.hue_bins - 1), weights=s,
                               minlength=self.hue_bins) / len(h)
        s_hist = np.histogram(s, bins=self.bins, range=(0, 1))[0] / len(s)
        v_hist = np.histogram(v, bins=self.bins, range=(0, 1))[0] / len(v)
        rg = rgb[:, 0] - rgb[:, 1]
        yb = 0.5 * (rgb[:, 0] + rgb[:, 1]) - rgb[:, 2]
        colourfulness = np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean())
        return np.concatenate([mean, std, np.clip(skew, -10, 10), pct, hue_hist, s_hist, v_hist, [colourfulness]])


@register("style feature", name="texture")
class TextureStats(Extractor):
    """Pixel-level texture statistics in the spirit of Portilla & Simoncelli ("A parametric texture model
    based on joint statistics of complex wavelet coefficients", IJCV 2000), reduced to what is cheap in
    numpy (written here because no maintained Python library computes them without a heavy stack):

    * a difference-of-Gaussians pyramid of the luminance (``levels`` band-pass bands): log variance,
      skewness and kurtosis per band;
    * the normalised autocorrelation of the two finest bands at lags up to ``lag`` pixels (periodic
      structure: pixel blocks, scanlines, halftone screens, dithering);
    * the correlation between the fine bands of R and B shifted horizontally and vertically against G
      (colour fringes, per-channel noise);
    * a magnitude-weighted histogram of gradient orientations (hatching, strokes).
    """

    name = "texture"

    @dataclass(frozen=True)
    class Params(Config):
        levels: int = 4
        lag: int = 4
        orientations: int = 8
        _constraints = {"levels": _ints(1, 8), "lag": _ints(1, 32), "orientations": _ints(2, 64)}

    def __init__(self, levels: int = 4, lag: int = 4, orientations: int = 8) -> None:
        self.levels, self.lag, self.orientations = int(levels), int(lag), int(orientations)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "levels": self.levels, "lag": self.lag, "orientations": self.orientations,
                "v": 1}

    def __call__(self, images: np.ndarray) -> np.ndarray:
        return np.stack([self._one(img) for img in images]).astype(np.float32)

    def _acf(self, band: np.ndarray) -> np.ndarray:
        f = np.fft.rfft2(band - band.mean())
        ac = np.fft.irfft2(np.abs(f) ** 2, s=band.shape)
        ac = ac / max(ac[0, 0], 1e-12)
        L = self.lag
        # half-plane of lags (dy >= 0, excluding the origin and its mirror duplicates)
        return np.array([ac[dy % band.shape[0], dx % band.shape[1]] for dy in range(0, L + 1)
                         for dx in range(-L, L + 1) if dy > 0 or dx > 0])

    def _one(self, img: np.ndarray) -> np.ndarray:
        from scipy import ndimage as ndi  # lazy: scipy

        x = img.astype(np.float64) / 255.0
        lum = x @ np.array([0.299, 0.587, 0.114])
        feats = []
        prev = lum
        bands = []
        for k in range(self.levels):
            low = ndi.gaussian_filter(lum, 2.0 ** k)
            band = prev - low
            prev = low
            bands.append(band)
            sd = band.std()
            z = (band - band.mean()) / max(sd, 1e-6)
            z2 = z * z
            feats += [np.log(sd + 1e-4), (z2 * z).mean(), np.log((z2 * z2).mean() + 1e-6)]
        for band in bands[:2]:
            feats += list(self._acf(band))
        hp = x - ndi.gaussian_filter(x, (1.0, 1.0, 0))
        g = hp[..., 1] - hp[..., 1].mean()
        for c in (0, 2):
            ch = hp[..., c] - hp[..., c].mean()
            denom = max(np.sqrt((ch ** 2).mean() * (g ** 2).mean()), 1e-9)
            for axis in (0, 1):
                feats += [(np.roll(ch, d, axis=axis) * g).mean() / denom for d in range(-self.lag, self.lag + 1)]
        gy, gx = ndi.sobel(lum, 0), ndi.sobel(lum, 1)
        mag = np.hypot(gx, gy)
        ang = np.mod(np.arctan2(gy, gx), np.pi)
        bins = np.minimum((ang / np.pi * self.orientations).astype(int), self.orientations - 1)
        hist = np.bincount(bins.ravel(), weights=mag.ravel(), minlength=self.orientations)
        feats += [*(hist / max(hist.sum(), 1e-9)), np.log(mag.mean() + 1e-4)]
        return np.asarray(feats)


# ----------------------------------------------------------------------------------------- CNN features
def random_cnn(channels: Sequence[int] = (32, 64, 128, 128), seed: int = 0) -> Callable[[Any], list[Any]]:
    """A seeded random-weight conv stack: per stage 3x3 conv + ReLU, 2x2 average pooling between stages.

    Returns a callable ``(N x 3 x S x S float tensor) -> list of per-stage feature maps``. He-normal weights
    drawn from a ``torch.Generator`` seeded with ``seed``; biases zero. (Any architecture of the alignment
    model registry -- torchvision, timm, transformers, custom -- is available through ``encgram:NAME``.)
    """
    import torch  # lazy: torch

    gen = torch.Generator().manual_seed(int(seed))
    weights = []
    c_in = 3
    for c in channels:
        weights.append(torch.randn(int(c), c_in, 3, 3, generator=gen) * (2.0 / (c_in * 9)) ** 0.5)
        c_in = int(c)

    def forward(x):
        import torch.nn.functional as F  # lazy: torch

        maps = []
        for i, w in enumerate(weights):
            if i:
                x = F.avg_pool2d(x, 2)
            x = F.relu(F.conv2d(x, w, padding=1))
            maps.append(x)
        return maps

    return forward


class _Projector:
    """Seeded Gaussian random projection per block (sklearn's GaussianRandomProjection matrix, applied in
    float32 by torch: numpy's BLAS right after torch's convolutions competes with torch's still-spinning
    OpenMP threads and runs many times slower), then L2 normalisation per block."""

    def __init__(self, dims: int, seed: int) -> None:
        self.dims, self.seed = int(dims), int(seed)
        self._mats: dict[int, Any] = {}

    def __call__(self, block: int, g: np.ndarray) -> np.ndarray:
        import torch  # lazy: torch

        t = torch.from_numpy(np.ascontiguousarray(g, dtype=np.float32))
        if g.shape[1] > self.dims:
            if block not in self._mats:
                from sklearn.random_projection import GaussianRandomProjection  # lazy: sklearn

                rp = GaussianRandomProjection(n_components=self.dims, random_state=self.seed + 1000 * block)
                rp.fit(np.zeros((1, g.shape[1]), np.float32))
                self._mats[block] = torch.from_numpy(np.ascontiguousarray(rp.components_.T, dtype=np.float32))
            t = t @ self._mats[block]
        t = t / torch.clamp(torch.linalg.vector_norm(t, dim=1, keepdim=True), min=1e-12)
        return t.numpy()


def gram_upper(f) -> np.ndarray:
    """Upper triangle of the Gram matrix ``F F^T / positions`` of N x C x (positions...) maps (or N x T x C
    token sequences, taken as C x T), power-normalised (signed square root)."""
    import torch  # lazy: torch

    if f.ndim == 3:  # tokens: N x T x C
        f = f.transpose(1, 2)
    f = f.reshape(f.shape[0], f.shape[1], -1).float()
    gram = torch.bmm(f, f.transpose(1, 2)) / f.shape[2]
    iu = torch.triu_indices(f.shape[1], f.shape[1])
    g = gram[:, iu[0], iu[1]].numpy().astype(np.float32)
    return np.sign(g) * np.sqrt(np.abs(g))  # tames the heavy tail of Gram entries


def channel_moments(f) -> np.ndarray:
    """Per-channel mean and standard deviation of N x C x (positions...) maps."""
    f = f.reshape(f.shape[0], f.shape[1], -1).float()
    return np.concatenate([f.mean(2).numpy(), f.std(2).numpy()], axis=1)


class _CNNExtractor(Extractor):
    @dataclass(frozen=True)
    class Params(Config):
        seed: int = 0
        dims: int = 256
        channels: tuple[int, ...] = (32, 64, 128, 128)
        _constraints = {"seed": _SEED, "dims": _ints(1)}

        def _check(self) -> None:
            if not self.channels or min(self.channels) < 1:
                raise InputError(f"must be one or more positive integers, got {list(self.channels)}",
                                 field="channels")

    def __init__(self, seed: int = 0, dims: int = 256, channels: Sequence[int] = (32, 64, 128, 128)) -> None:
        self.seed, self.dims, self.channels = int(seed), int(dims), tuple(int(c) for c in channels)
        self._net: Callable[[Any], list[Any]] | None = None      # random_cnn, built on first use
        self._project = _Projector(self.dims, self.seed)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "backbone": "random-cnn", "channels": self.channels, "seed": self.seed,
                "dims": self.dims, "v": 1}

    def _maps(self, images: np.ndarray):
        import torch  # lazy: torch

        if self._net is None:
            self._net = random_cnn(self.channels, self.seed)
        x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0
        x = (x - 0.45) / 0.25
        with torch.no_grad():
            return self._net(x)


@register("style feature", name="gram")
class GramFeatures(_CNNExtractor):
    name = "gram"

    def __call__(self, images: np.ndarray) -> np.ndarray:
        return np.concatenate([self._project(i, gram_upper(f)) for i, f in enumerate(self._maps(images))], axis=1)


@register("style feature", name="moments")
class ChannelMoments(_CNNExtractor):
    name = "moments"

    def __call__(self, images: np.ndarray) -> np.ndarray:
        return np.concatenate([self._project(i, channel_moments(f)) for i, f in enumerate(self._maps(images))],
                              axis=1)


# ----------------------------------------------------------------------------- alignment-registry encoders
class _RegistryExtractor(Extractor):
    """An encoder of the alignment model registry (:mod:`modelseek.align`): loaded and hooked by
    :func:`modelseek.align.load_model` at the entry's ``layer``; the registry file comes from ``registry``
    or the ``MODELSEEK_MODEL_REGISTRY`` environment variable."""

    @dataclass(frozen=True)
    class Params(Config):
        model: str = ""
        registry: str | None = None
        seed: int = 0
        dims: int = 256
        _constraints = {"seed": _SEED, "dims": _ints(1)}

    def __init__(self, model: str = "", registry: str | Path | None = None, seed: int = 0, dims: int = 256) -> None:
        if not model:
            raise InputError(f"feature {self.name!r} needs a registry model name: {self.name}:NAME", field="method")
        self.model, self.seed, self.dims = model, int(seed), int(dims)
        self.entry = ModelRegistry.load(registry).get(model)
        self._loaded: LoadedModel | None = None

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "entry": self.entry.fingerprint(), "seed": self.seed, "dims": self.dims, "v": 1}

    def key(self) -> str:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.model)
        return f"{super().key()}-{safe}"

    def _model(self):
        if self._loaded is None:
            self._loaded = load_model(self.entry)
            if self._loaded.call_images is None:
                raise InputError(f"model {self.model!r} takes no images", field="modality")
        return self._loaded


@register("style feature", name="enc")
class EncoderEmbedding(_RegistryExtractor):
    """The entry's embedding (its layer, reduced by its ``embedding`` strategy)."""

    name = "enc"

    def __call__(self, images: np.ndarray) -> np.ndarray:
        return embed_images(self.entry, list(images), model=self._model())


@register("style feature", name="encgram")
class EncoderGram(_RegistryExtractor):
    """Gram matrix of the entry's layer output (conv maps N x C x H x W, or tokens N x T x C), projected."""

    name = "encgram"

    def __call__(self, images: np.ndarray) -> np.ndarray:
        import torch  # lazy: torch

        loaded = self._model()
        x = preprocess_images(self.entry, list(images))
        with torch.no_grad():
            out = _first_tensor(_run_hooked(loaded, lambda: loaded.call_images(x)))
        if out is None or out.ndim < 3:
            shape = None if out is None else tuple(out.shape)
            raise InputError(f"model {self.model!r}: layer {self.entry.layer!r} gives {shape}; a Gram matrix needs "
                             f"spatial maps or tokens", field="layer")
        return self._project_gram(gram_upper(out))

    def _project_gram(self, g: np.ndarray) -> np.ndarray:
        if not hasattr(self, "_proj"):
            self._proj = _Projector(self.dims, self.seed)
        return self._proj(0, g)


def make_extractor(spec: str, seed: int = 0, **params: Any) -> Extractor:
    """An extractor by name: ``hist``, ``colour``, ``texture``, ``gram``, ``moments``, or a registry encoder
    ``enc:NAME`` / ``encgram:NAME``. ``params`` are checked by the extractor's :attr:`Extractor.Params`
    config; ``seed`` goes to those that take one, ``registry`` only to encoders."""
    kind, _, arg = str(spec).partition(":")
    cls = EXTRACTORS.get(kind)
    names = {f.name for f in dataclasses.fields(cls.Params)}  # type: ignore[arg-type] # Params are dataclasses; Config not
    if arg:
        if "model" not in names:
            raise InputError(f"feature {kind!r} takes no argument (got {spec!r})", field="method")
        params["model"] = arg
    if "seed" in names:
        params.setdefault("seed", seed)
    if "registry" not in names:
        params.pop("registry", None)
    elif params.get("registry") is not None:
        params["registry"] = str(params["registry"])
    checked = cls.Params.from_mapping(params, source=Source(prefix=kind))
    return cls(**{name: getattr(checked, name) for name in names})


# ----------------------------------------------------------------------------------------- extraction
#: version of the image reading (decode, reduce, resize) that features depend on; part of every cache key
LOADER_VERSION = 2
#: threads reading, checksumming and decoding image files ahead of the feature extractors (PIL's decoders
#: release the GIL); at most this many batches of decoded images wait in memory
READ_THREADS = 2
PREFETCH_BATCHES = 2


def _cache_fields(ext_key: str, item_key: str) -> dict[str, str]:
    return {"kind": "style", "extractor": ext_key, "image": item_key}


class _Digests:
    """File -> SHA-1 of its bytes, remembered in the cache by (path, size, mtime, inode) so that a warm run
    reads no image file; a file whose stat changed is read and hashed again (git's index does the same)."""

    def __init__(self, cache) -> None:
        self.cache = cache

    @staticmethod
    def _stat_fields(path: Path) -> dict[str, Any] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return {"kind": "style-digest", "path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                "ino": st.st_ino}

    def known(self, path: Path) -> str | None:
        fields = self._stat_fields(path)
        if fields is None:
            return None
        v = self.cache.get(cache_key(fields))
        return None if v is None else bytes(np.asarray(v, np.uint8)).decode("ascii", "replace")

    def remember(self, path: Path, stat_fields: dict[str, Any] | None, hexdigest: str) -> None:
        if stat_fields is not None:
            self.cache.put(cache_key(stat_fields), stat_fields, np.frombuffer(hexdigest.encode("ascii"), np.uint8))


def extract(dataset: StyleDataset, extractor: Extractor, size: int = 128, batch_size: int = 32,
            cache: str | Path | None = None, progress: bool = False) -> np.ndarray:
    """Features of every image of ``dataset`` (N x D float32); see :func:`extract_many`."""
    return extract_many(dataset, [extractor], size, batch_size, cache, progress)[0]


def _prefetched(batches: list[list[int]], load: Callable[[int], Any], threads: int):
    """Yield ``(batch, [load(i) for i in batch])`` for each batch, in order, while a pool of ``threads`` loads the
    next :data:`PREFETCH_BATCHES` batches; a failure (or closing the generator) cancels what is pending."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads) as pool:
        pending = [(b, [pool.submit(load, i) for i in b]) for b in batches[:PREFETCH_BATCHES]]
        nxt = len(pending)
        try:
            while pending:
                batch, futures = pending.pop(0)
                if nxt < len(batches):
                    pending.append((batches[nxt], [pool.submit(load, i) for i in batches[nxt]]))
                    nxt += 1
                yield batch, [f.result() for f in futures]
        except BaseException:  # a bad image: stop reading ahead, report it
            for _, futures in pending:
                for f in futures:
                    f.cancel()
            raise


def extract_many(dataset: StyleDataset, extractors: Sequence[Extractor], size: int = 128, batch_size: int = 32,
                 cache: str | Path | None = None, progress: bool = False) -> list[np.ndarray]:
    """Features of every image of ``dataset`` for each extractor (N x D float32 each), images resized to
    ``size`` x ``size``, in one streamed pass: each image is read, decoded at reduced size
    (:func:`modelseek.style.images.decode`) and handed to every extractor once; at most a few batches of
    small decoded images are held in memory, whatever the number or size of the files.

    With ``cache`` (a folder; the shared :class:`modelseek.retrieval.features.cache.FeatureCache`: atomic writes,
    hash-verified reads, a corrupt entry is recomputed) each image's vectors are stored under the SHA-1 of
    its file's bytes (arrays: of the array) and reused; every finished batch is written, so an interrupted
    extraction resumes where it stopped. A progress bar (images, rate, ETA) goes to stderr with ``progress``.
    """
    if size < 8:
        raise InputError(f"image size must be at least 8, got {size}", field="size")
    n = len(dataset)
    if n == 0:
        raise InputError("no images")
    store = None                    # the FeatureCache at ``cache``
    if cache is not None:
        store = FeatureCache(cache)
        digests = _Digests(store)
    ext_keys = [f"{e.key()}-s{int(size)}-l{LOADER_VERSION}" for e in extractors]
    rows: list[list[np.ndarray | None]] = [[None] * n for _ in extractors]
    item: list[str | None] = [None] * n

    def lookup(i: int) -> bool:
        """Fill image i's rows from the cache; True when every extractor's vector was there."""
        if store is None or (item_key := item[i]) is None:
            return False
        for k, key in enumerate(ext_keys):
            if rows[k][i] is None:
                rows[k][i] = store.get(cache_key(_cache_fields(key, item_key)))
        return all(rows[k][i] is not None for k in range(len(extractors)))

    files = dataset.paths is not None
    if store is not None:  # the cache key of each image: its content's checksum where known, an array's key
        item[:] = [_known_item(dataset, i, digests) for i in range(n)]
    todo = [i for i in range(n) if not lookup(i)]

    def load(i: int) -> np.ndarray | None:
        """Image i at ``size`` (None when its checksum shows its features are already cached)."""
        if dataset.paths is None:
            return dataset.image(i, size)
        p = Path(dataset.paths[i])
        stat_fields = _Digests._stat_fields(p) if store is not None else None
        data = imgio.read_bytes(p)
        if store is not None:
            d = imgio.digest(data)
            digests.remember(p, stat_fields, d)
            item[i] = f"sha1:{d}"
            if lookup(i):  # the same content under another name, or a touched but unchanged file
                return None
        return imgio.decode(data, size, path=p)

    bar = _image_bar(len(todo), extractors) if progress and todo else None
    batches = [todo[j:j + batch_size] for j in range(0, len(todo), batch_size)]
    try:
        with contextlib.closing(_prefetched(batches, load, READ_THREADS if files else 1)) as stream:
            for batch, loaded in stream:
                fresh = [(i, img) for i, img in zip(batch, loaded) if img is not None]
                if fresh:
                    imgs = np.stack([img for _, img in fresh])
                    for k, ext in enumerate(extractors):
                        feats = np.asarray(ext(imgs), dtype=np.float32)
                        for (i, _), v in zip(fresh, feats):
                            rows[k][i] = v
                            if store is not None and (item_key := item[i]) is not None:  # set by load/_known_item
                                fields = _cache_fields(ext_keys[k], item_key)
                                store.put(cache_key(fields), fields, v)
                if bar is not None:
                    bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    return [_stacked(rows[k], ext, dataset) for k, ext in enumerate(extractors)]


def _known_item(dataset: StyleDataset, i: int, digests: _Digests) -> str | None:
    if dataset.paths is None:
        return dataset.key(i)
    d = digests.known(Path(dataset.paths[i]))
    return f"sha1:{d}" if d else None


def _image_bar(total: int, extractors: Sequence[Extractor]):
    return progress_counter(total, desc=f"{'+'.join(e.name for e in extractors)} features (images)")


def _stacked(rows: list, ext: Extractor, dataset: StyleDataset) -> np.ndarray:
    """One extractor's vectors as an N x D float32 matrix; non-finite values are an error naming the image."""
    m = np.stack(rows).astype(np.float32)
    if not np.isfinite(m).all():
        bad = int(np.where(~np.isfinite(m).all(axis=1))[0][0])
        raise InputError(f"non-finite {ext.name} features for image {dataset.ids[bad]!r}")
    return m
