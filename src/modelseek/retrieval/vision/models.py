"""Embeddings by forward hooks: load a model per registry entry, run stimuli, take one layer's output.

Public entry points (stable names)::

    load_model(entry) -> LoadedModel              # eval() mode, seeded random init when no weights
    layer_names(module) -> list[str]              # valid module paths for ``layer``
    preprocess_images(entry, images) -> Tensor    # resize (shorter side, bicubic), centre crop, normalise
    embed_images(entry, images_or_paths, batch_size=32, cache_dir=None) -> np.ndarray [n, dim] float32
    embed_texts(entry, texts, batch_size=32, cache_dir=None) -> np.ndarray [n, dim] float32
    embed_catalog(entry, catalog, cache_dir=None) -> np.ndarray   # images or texts of a StimulusCatalog

``entry`` is a :class:`~modelseek.align.formats.ModelEntry` or its dict form. Each ``source`` is one class in
:mod:`modelseek.retrieval.vision.sources` (torchvision, timm, open_clip, transformers, custom), registered by
name;
:func:`load_model` asks the entry's source to build the model, then resolves the layer.

``weights`` null or ``"random"`` means random init with ``torch.manual_seed(model_parameters.seed or 0)``
inside :func:`torch.random.fork_rng` (the caller's RNG state is untouched); a path to an existing file loads
a state dict (``.safetensors`` or a torch checkpoint, strictly); ``imagenet``/``pretrained`` the library's
pretrained weights (timm: those of the name's tag). Pretrained weights that cannot be had are an
:class:`~modelseek.retrieval.vision.sources.WeightsUnavailable` error, or, with ``random_fallback=True``
(``align
validate --deep``), random weights with a note saying so.

The hook stops the forward pass once the hooked layer has run (later layers are not computed). If a module
runs several times in one forward pass, its first output is taken. Spatial maps are assumed NCHW.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import InputError
from ..features.cache import FeatureCache, cache_key, texts_fingerprint
from ...core.progress import progress_bar
from ...core.registry import closest
from .choices import Modality, Strategy
from .entries import IMAGENET_MEAN, IMAGENET_STD, MAX_INPUT_SIDE, ModelEntry, Preprocess
from .sources import LoadedModel, Spec, WeightsUnavailable, get_source

log = logging.getLogger(__name__)

OUTPUT_ALIASES = ("output",)
CACHE_FORMAT = 2
DEFAULT_INPUT_SIZE = 224
DEFAULT_CROP_PCT = 0.875


def _entry(entry) -> ModelEntry:
    return entry if isinstance(entry, ModelEntry) else ModelEntry.from_dict(entry)


_RESOLVED: dict[str, ModelEntry] = {}


def resolve_entry(entry) -> ModelEntry:
    """The entry with every default filled in: ``input_size`` (the model's crop size: timm's pretrained config,
    torchvision's weights transforms, else 224) and preprocessing (mean, std, interpolation, crop_pct, from the
    same place, else ImageNet's, bicubic, 0.875). Values the registry gives are kept."""
    from dataclasses import replace

    entry = _entry(entry)
    pp = entry.preprocess
    if entry.input_size is not None and None not in (pp.mean, pp.std, pp.interpolation) and (
            pp.resize is not None or pp.crop_pct is not None):
        return entry
    key = entry.fingerprint()
    if key not in _RESOLVED:
        need_model = entry.modality is Modality.IMAGE
        d = get_source(entry.source).defaults(entry) if need_model else {}
        size = entry.input_size or d.get("input_size") or (DEFAULT_INPUT_SIZE, DEFAULT_INPUT_SIZE)
        if max(size) > MAX_INPUT_SIDE:
            raise InputError(f"model {entry.model_name!r}: input size {size} is larger than the limit "
                             f"{MAX_INPUT_SIDE}", field="input_size")
        resize = pp.resize
        crop_pct = pp.crop_pct if pp.crop_pct is not None else d.get("crop_pct")
        if resize is None and crop_pct is None and "resize" in d and entry.input_size is None:
            resize = d["resize"]
        pp = Preprocess(mean=pp.mean or d.get("mean") or IMAGENET_MEAN, std=pp.std or d.get("std") or IMAGENET_STD,
                        resize=resize, crop=pp.crop, interpolation=pp.interpolation or d.get("interpolation")
                        or "bicubic", crop_pct=crop_pct if crop_pct is not None else DEFAULT_CROP_PCT)
        _RESOLVED[key] = replace(entry, input_size=tuple(size), preprocess=pp)
    return _RESOLVED[key]


def layer_names(module) -> list[str]:
    """All module paths of ``module`` usable as ``layer`` (plus the alias ``output``)."""
    return [n for n, _ in module.named_modules() if n]


def resolve_layer(module, path: str, model_name: str = ""):
    """The submodule at ``path`` (dotted; negative integers index from the end of a container);
    ``None`` for the alias ``output``. Unknown paths raise an InputError listing the valid paths."""
    if path in OUTPUT_ALIASES:
        return None
    cur = module
    for part in path.split("."):
        children = dict(cur.named_children())
        if part in children:
            cur = children[part]
            continue
        if part.lstrip("-").isdigit() and int(part) < 0 and children:
            keys = list(children)
            idx = int(part)
            if -len(keys) <= idx:
                cur = children[keys[idx]]
                continue
        names = layer_names(module)
        close = closest(path, names)
        hint = f" Did you mean {close!r}?" if close else ""
        shown = ", ".join(names[:60]) + (f", ... ({len(names)} in all)" if len(names) > 60 else "")
        raise InputError(f"model {model_name!r}: unknown layer {path!r}.{hint} Valid module paths: output, {shown}",
                         field="layer")
    return cur


def load_model(entry, *, random_fallback: bool = False) -> LoadedModel:
    """Build the model of a registry entry in eval mode and resolve its layer.

    Pretrained weights that cannot be had raise :class:`WeightsUnavailable` (one line); with
    ``random_fallback`` the model gets seeded random weights instead and ``random_fallback``/``weights_note``
    of the result say so (enough to check layers and shapes, not to score)."""
    entry = resolve_entry(entry)
    source = get_source(entry.source)
    try:
        loaded = source.build(entry, Spec.of(entry))
    except WeightsUnavailable as exc:
        if not random_fallback:
            raise
        loaded = source.build(entry, Spec.of(entry, force_random=True))
        loaded.weights_note = f"RANDOM weights: {exc.message.split(': ', 1)[-1]}"
        loaded.random_fallback = True
    loaded.module.eval()
    loaded.layer = resolve_layer(loaded.module, entry.layer, entry.model_name)
    return loaded


@dataclass(frozen=True)
class EntryCheck:
    """What ``align validate --deep`` found for one model: the embedding width of its layer on a dummy batch."""

    model_name: str
    layer: str
    ok: bool
    dim: int | None = None
    weights: str = ""
    random_fallback: bool = False
    problem: str = ""

    def to_dict(self) -> dict:
        return {"model_name": self.model_name, "layer": self.layer, "ok": self.ok, "dim": self.dim,
                "weights": self.weights, "random_fallback": self.random_fallback, "problem": self.problem}


def check_entry(entry, *, random_fallback: bool = True) -> EntryCheck:
    """Build the model (random weights when pretrained ones cannot be had, said in the result), check that its
    layer exists and run one seeded dummy batch (no data set) to check the embedding width against
    ``output_dim``. Problems are reported in the result, not raised."""
    import torch  # lazy: torch

    entry = _entry(entry)
    try:
        entry = resolve_entry(entry)
        loaded = load_model(entry, random_fallback=random_fallback)
        call_images, call_texts = loaded.call_images, loaded.call_texts
        with torch.no_grad():
            if call_images is not None:
                x = torch.randn(2, 3, *entry.input_size, generator=torch.Generator().manual_seed(0))
                out, mask = _run_hooked(loaded, lambda: call_images(x)), None
            elif call_texts is not None:
                captured = {}

                def call():
                    o, captured["mask"] = call_texts(["a short text", "another text"])
                    return o

                out = _run_hooked(loaded, call)
                mask = captured.get("mask")
            else:
                raise InputError(f"model {entry.model_name!r} takes neither images nor texts", field="modality")
            t = _first_tensor(out)
            if t is None:
                raise InputError(f"model {entry.model_name!r}: layer {entry.layer!r} produced no tensor", field="layer")
            dim = int(apply_strategy(t, entry.embedding, mask, entry.model_name).shape[1])
    except InputError as exc:
        return EntryCheck(entry.model_name, entry.layer, False, problem=exc.message)
    except RuntimeError as exc:  # a shape error inside the model (e.g. a fixed-size ViT given another size)
        first = (str(exc).strip().splitlines() or [""])[0]
        return EntryCheck(entry.model_name, entry.layer, False, problem=f"forward pass failed: {first}")
    if entry.output_dim is not None and dim != entry.output_dim:
        return EntryCheck(entry.model_name, entry.layer, False, dim, loaded.weights_note, loaded.random_fallback,
                          problem=f"output_dim is {entry.output_dim} but layer {entry.layer!r} with "
                                  f"{entry.embedding.value!r} gives {dim}")
    return EntryCheck(entry.model_name, entry.layer, True, dim, loaded.weights_note, loaded.random_fallback)


# ---------------------------------------------------------------- images


def _open_image(x, index: int):
    from PIL import Image, UnidentifiedImageError  # lazy: PIL

    if isinstance(x, Image.Image):
        img = x
    elif isinstance(x, np.ndarray):
        arr = x
        if arr.dtype != np.uint8:
            if arr.size and (np.nanmin(arr) < 0 or np.nanmax(arr) > 1):
                raise InputError(f"image {index}: float arrays must lie in [0, 1]")
            arr = np.round(np.nan_to_num(arr) * 255).astype(np.uint8)
        if arr.ndim not in (2, 3):
            raise InputError(f"image {index}: expected an HxW or HxWxC array, got shape {arr.shape}")
        img = Image.fromarray(arr)
    elif isinstance(x, (str, os.PathLike)):
        p = Path(x)
        if not p.is_file():
            raise InputError("image file does not exist", path=p)
        try:
            with Image.open(p) as im:
                im.load()
                img = im.copy()
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            raise InputError(f"cannot decode image: {exc}", path=p) from None
    else:
        raise InputError(f"image {index}: expected a path, a PIL image or a numpy array, got {type(x).__name__}")
    return img.convert("RGB")


def _resample(name: str):
    from PIL import Image  # lazy: PIL

    return {"bicubic": Image.Resampling.BICUBIC, "bilinear": Image.Resampling.BILINEAR,
            "nearest": Image.Resampling.NEAREST}[name]


def _transform(img, entry: ModelEntry) -> np.ndarray:
    """One image, preprocessed as a resolved entry (:func:`resolve_entry`) says; resolve_entry's defaults stand
    in for what an unresolved one leaves unset."""
    pp = entry.preprocess
    ch, cw = pp.crop or entry.input_size or (DEFAULT_INPUT_SIZE, DEFAULT_INPUT_SIZE)
    resize = pp.resize if pp.resize is not None else round(min(ch, cw) / (pp.crop_pct or DEFAULT_CROP_PCT))
    w, h = img.size
    if isinstance(resize, int):  # shorter side to `resize`, keep the aspect ratio
        if w <= h:
            nw, nh = resize, max(1, round(h * resize / w))
        else:
            nw, nh = max(1, round(w * resize / h)), resize
    else:
        nh, nw = resize
    resample = _resample(pp.interpolation or "bicubic")
    img = img.resize((nw, nh), resample)
    if nw < cw or nh < ch:  # crop larger than the image: resize up to cover it
        scale = max(cw / nw, ch / nh)
        nw, nh = int(np.ceil(nw * scale)), int(np.ceil(nh * scale))
        img = img.resize((nw, nh), resample)
    left, top = round((nw - cw) / 2.0), round((nh - ch) / 2.0)
    img = img.crop((left, top, left + cw, top + ch))
    arr = np.asarray(img, dtype=np.float32) / 255.0
    mean = np.asarray(pp.mean, dtype=np.float32)
    std = np.asarray(pp.std, dtype=np.float32)
    arr = (arr - mean) / std
    return np.ascontiguousarray(arr.transpose(2, 0, 1))


def preprocess_images(entry, images: Sequence) -> Any:
    """Decode and preprocess a batch -> float32 tensor [n, 3, H, W]."""
    import torch  # lazy: torch

    entry = resolve_entry(entry)
    return torch.from_numpy(np.stack([_transform(_open_image(x, i), entry) for i, x in enumerate(images)]))


# ---------------------------------------------------------------- hooks and strategies


class _Stop(Exception):
    """Raised by the hook to skip the layers after the hooked one."""


def _first_tensor(out):
    import torch  # lazy: torch

    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "last_hidden_state") and out.last_hidden_state is not None:
        return out.last_hidden_state
    if isinstance(out, Mapping):
        for v in out.values():
            t = _first_tensor(v)
            if t is not None:
                return t
    if isinstance(out, (tuple, list)):
        for v in out:
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def _run_hooked(loaded: LoadedModel, call: Callable[[], Any]):
    captured = {}
    handle = None
    if loaded.layer is not None:
        def hook(_module, _inp, out):
            captured["out"] = out
            raise _Stop

        handle = loaded.layer.register_forward_hook(hook)
    try:
        out = call()
    except _Stop:
        out = captured["out"]
    finally:
        if handle is not None:
            handle.remove()
    return out


def apply_strategy(t, strategy: Strategy, mask=None, name: str = "") -> np.ndarray:
    """[n, ...] layer output -> [n, dim] float32 by the strategy (see :class:`Strategy`)."""
    import torch  # lazy: torch

    strategy = Strategy(strategy)
    t = t.detach().float()
    if t.ndim < 2:
        raise InputError(f"model {name!r}: layer output has shape {tuple(t.shape)}; need a batch axis and features",
                         field="layer")
    if strategy is Strategy.FLATTEN:
        v = t.reshape(t.shape[0], -1)
    elif strategy is Strategy.CLS:
        if t.ndim != 3:
            raise InputError(f"model {name!r}: 'cls' needs a [n, tokens, dim] output, got {tuple(t.shape)}",
                             field="embedding")
        v = t[:, 0, :]
    elif t.ndim == 2:
        v = t
    elif t.ndim == 3:  # tokens: mean over tokens (masked when a mask is given)
        if mask is not None and mask.shape == t.shape[:2]:
            m = mask.to(t.dtype).unsqueeze(-1)
            v = (t * m).sum(1) / m.sum(1).clamp_min(1.0)
        else:
            v = t.mean(1)
    else:  # [n, c, *spatial]: global average pool
        v = t.reshape(t.shape[0], t.shape[1], -1).mean(-1)
    return v.to(torch.float32).cpu().numpy()


def _embed_batches(loaded: LoadedModel, batches: Iterable, run_batch, n_total: int, progress: bool) -> np.ndarray:
    import torch  # lazy: torch

    out = []
    entry = loaded.entry
    with torch.no_grad():
        for batch in progress_bar(batches, desc=f"embed {entry.model_name}", disable=not progress):
            try:
                tensor, mask = run_batch(batch)
            except RuntimeError as exc:  # a shape error inside the model, e.g. a fixed-size ViT at another size
                first = (str(exc).strip().splitlines() or [""])[0]
                raise InputError(f"model {entry.model_name!r}: forward pass failed (input size {entry.input_size}): "
                                 f"{first}", field="input_size") from None
            t = _first_tensor(tensor)
            if t is None:
                raise InputError(f"model {entry.model_name!r}: layer {entry.layer!r} produced no tensor",
                                 field="layer")
            out.append(apply_strategy(t, entry.embedding, mask, entry.model_name))
    emb = np.concatenate(out, axis=0) if out else np.zeros((0, entry.output_dim or 0), np.float32)
    if emb.shape[0] != n_total:
        raise RuntimeError(f"embedding count {emb.shape[0]} != stimuli {n_total}")
    if entry.output_dim is not None and emb.shape[1] != entry.output_dim:
        raise InputError(f"model {entry.model_name!r}: layer {entry.layer!r} with {entry.embedding.value!r} "
                         f"gives dim {emb.shape[1]}, registry says {entry.output_dim}", field="output_dim")
    if not np.all(np.isfinite(emb)):
        raise InputError(f"model {entry.model_name!r}: non-finite values in the embeddings", field="layer")
    return emb


def _stimuli_key(items: Sequence) -> str:
    """A content key of the inputs: paths by (resolved path, size, mtime), images by their pixels."""
    from PIL import Image  # lazy: PIL

    h = hashlib.sha256()
    for x in items:
        if isinstance(x, (str, os.PathLike)):
            p = Path(x)
            st = p.stat() if p.exists() else None
            h.update(f"p:{p.resolve()}:{st.st_size if st else -1}:{st.st_mtime_ns if st else -1}\n".encode())
        elif isinstance(x, np.ndarray):
            h.update(f"a:{x.shape}:{x.dtype}:".encode() + hashlib.sha256(np.ascontiguousarray(x).tobytes()).digest())
        elif isinstance(x, Image.Image):
            h.update(f"i:{x.mode}:{x.size}:".encode() + hashlib.sha256(x.tobytes()).digest())
        else:
            h.update(f"t:{x}\n".encode())
    return h.hexdigest()[:16]


def _text_key(texts: Sequence[str]) -> str:
    return "txt" + texts_fingerprint(texts)[:16]


def _cache_fields(entry: ModelEntry, stimuli_key: str) -> dict:
    return {"kind": "align-embedding", "align_format": CACHE_FORMAT, "model_name": entry.model_name,
            "layer": entry.layer, "embedding": entry.embedding.value, "entry": entry.fingerprint(),
            "stimuli": stimuli_key}


def _cached(entry, stimuli_key, cache_dir, compute):
    """Serve from / fill the shared verified feature cache (:class:`modelseek.retrieval.features.cache.FeatureCache`:
    atomic writes, payload hash checked on read, a corrupt file recomputed)."""
    if cache_dir is None:
        return compute()
    cache = FeatureCache(cache_dir)
    fields = _cache_fields(entry, stimuli_key)
    key = cache_key(fields)
    hit = cache.get(key)
    if hit is not None:
        return hit
    emb = compute()  # any error (bad image, bad layer) raises here: nothing is written
    cache.put(key, fields, emb)
    return emb


def embed_images(entry, images_or_paths: Sequence, batch_size: int = 32, cache_dir: str | os.PathLike | None = None,
                 *, model: LoadedModel | None = None, stimuli_key: str | None = None,
                 progress: bool = False) -> np.ndarray:
    """Embed images (paths, PIL images or HxWxC arrays) -> float32 [n, dim].

    With ``cache_dir`` the result is cached per model / layer / strategy / entry fingerprint / stimuli key
    (``stimuli_key`` defaults to a content hash of the inputs); a corrupt entry is recomputed.
    """
    entry = resolve_entry(entry)
    items = list(images_or_paths)
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")

    def compute():
        loaded = model or load_model(entry)
        call_images = loaded.call_images
        if call_images is None:
            raise InputError(f"model {entry.model_name!r} takes no images", field="modality")
        batches = [items[i:i + batch_size] for i in range(0, len(items), batch_size)]

        def run_batch(b):
            x = preprocess_images(entry, b)
            return _run_hooked(loaded, lambda: call_images(x)), None

        return _embed_batches(loaded, batches, run_batch, len(items), progress)

    return _cached(entry, stimuli_key or _stimuli_key(items), cache_dir, compute)


def embed_texts(entry, texts: Sequence[str], batch_size: int = 32, cache_dir: str | os.PathLike | None = None,
                *, model: LoadedModel | None = None, stimuli_key: str | None = None,
                progress: bool = False) -> np.ndarray:
    """Embed texts with a text model (``modality: text``) -> float32 [n, dim]; ``mean`` is masked."""
    entry = resolve_entry(entry)
    items = [str(t) for t in texts]

    def compute():
        loaded = model or load_model(entry)
        call_texts = loaded.call_texts
        if call_texts is None:
            raise InputError(f"model {entry.model_name!r} takes no texts (set modality: text)", field="modality")
        batches = [items[i:i + batch_size] for i in range(0, len(items), batch_size)]
        captured = {}

        def run_batch(b):
            def call():
                out, mask = call_texts(b)
                captured["mask"] = mask
                return out

            captured["mask"] = None
            out = _run_hooked(loaded, call)
            return out, captured["mask"]

        return _embed_batches(loaded, batches, run_batch, len(items), progress)

    return _cached(entry, stimuli_key or _text_key(items), cache_dir, compute)


def embed_catalog(entry, catalog, cache_dir: str | os.PathLike | None = None, batch_size: int = 32, *,
                  model: LoadedModel | None = None, progress: bool = False) -> np.ndarray:
    """Embed every stimulus of a :class:`~modelseek.align.formats.StimulusCatalog` (cached by catalog version)."""
    entry = _entry(entry)
    key = f"cat{catalog.version()}"
    if entry.modality is Modality.TEXT:
        texts = []
        for i, s in enumerate(catalog):
            if s.text is None:
                raise InputError(f"text model {entry.model_name!r} needs a 'text' for every stimulus",
                                 path=catalog.path, line=i + 1, field="text")
            texts.append(s.text)
        return embed_texts(entry, texts, batch_size, cache_dir, model=model, stimuli_key=key, progress=progress)
    paths = [catalog.resolve(s) for s in catalog]
    return embed_images(entry, paths, batch_size, cache_dir, model=model, stimuli_key=key, progress=progress)
