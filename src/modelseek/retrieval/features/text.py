"""Frozen sentence features from any Hugging Face encoder.

:func:`extract_features` runs texts through a model loadable by ``transformers.AutoModel`` (BERT, RoBERTa,
DeBERTa, ALBERT, DistilBERT, XLM-R, MPNet, MiniLM, the encoder of T5-like models...) and pools one vector per
text:

* ``pooling``: ``mean`` (over real tokens, by attention mask) or ``cls`` (the first token);
* ``layer``: ``last``, an index into the hidden states (0 = embedding output, negative counts from the end),
  ``mean`` = the average of the pooled vectors of every transformer layer (1..L), or ``all`` = the pooled
  vector of each transformer layer (an N x L x H array; the rankers' ``layer: best`` scores each and keeps the
  best). Averaging layers raised LogME's correlation with fine-tuned accuracy from 0.58 to 0.86 in "Choose
  Your Transformer" (Garbas et al., Findings of ACL 2024).

Speed: texts are tokenized once, sorted by length and cut into batches padded only to their own longest
text (dynamic padding), the forward pass runs under ``torch.inference_mode`` and, on CUDA, under bf16/fp16
autocast. Results come back as float32 in the caller's order.

Where a model comes from (ids, folders, shipped packages) and whether the Hub can be reached:
:mod:`modelseek.retrieval.features.sources` (its names are importable from here too).

A content-addressed cache (:mod:`modelseek.retrieval.features.cache`) keyed by model id + revision (a local folder:
its path and the names, sizes and modification times of its files), layer, pooling, max_length and a
fingerprint of the texts makes a second call on the same inputs a file read, with no model load.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.enums import Choice
from ...core.errors import InputError, ModelseekError
from ...core.progress import progress_bar
from . import lean_bert
from .cache import FeatureCache, cache_key, texts_fingerprint
from .limits import token_limit
from .loading import quiet_transformers, snapshot_problem, summarise_load_report
from .sources import (MINILM_PACKAGE, _model_identity, hub_offline_reason, in_hub_cache,  # noqa: F401 (re-exported)
                      is_hub_source, offline_minilm_path, package_path, resolve_source)

log = logging.getLogger(__name__)



class Pooling(Choice):
    MEAN = "mean"
    CLS = "cls"

    @classmethod
    def parse(cls, value: str | Pooling, field: str | None = "pooling") -> Pooling:
        return super().parse(value, field)


def parse_layer(value: str | int, best: bool = False) -> str | int:
    """``last`` | ``mean`` | ``all`` | an integer (also given as a string such as ``"-2"``); with ``best``
    (a ranker's option: score each layer, keep the best) also ``best``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    text = str(value).strip().lower()
    if text in ("last", "mean", "all") or (best and text == "best"):
        return text
    try:
        return int(text)
    except ValueError:
        raise InputError(f"unknown layer {value!r}; valid values: last, mean, all, {'best, ' if best else ''}"
                         f"or an integer index", field="layer") from None


# ------------------------------------------------------------------------------------------ extraction
@dataclass
class LoadedTextModel:
    """A text model ready to run: the module (eval mode, on ``device``), its tokenizer and a display name."""

    model: Any
    tokenizer: Any
    device: Any
    name: str
    #: what the tokenizer is (:func:`_tokenizer_key`), set on first use
    token_key: str | None = None


def pick_device(device: str = "auto"):
    import torch  # lazy: torch

    if device != "auto":
        try:
            return torch.device(device)
        except RuntimeError as exc:
            raise InputError(f"unknown device {device!r}: {exc}", field="device") from None
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


BACKENDS = ("transformers", "lean", "auto")


def _load_model(source: str, revision: str | None, device: str, name: str = "",
                local_files_only: bool = False, backend: str = "transformers") -> LoadedTextModel:
    """Load tokenizer and encoder (the encoder alone for encoder-decoder models) in eval mode.

    ``backend``: ``transformers`` (AutoModel/AutoTokenizer), ``lean`` (:mod:`.lean_bert`, a plain BERT encoder in
    a local folder, without importing transformers; anything else is an error) or ``auto`` (lean where it
    applies, else transformers)."""
    if backend != "transformers" and revision is None:
        try:
            lean_model, lean_tok = lean_bert.load(source)
        except lean_bert.Unsupported as exc:
            if backend == "lean":
                raise ModelseekError(f"model {name or source!r}: the lean backend cannot run it ({exc.reason})") \
                    from None
            log.debug("model %s: transformers backend (%s)", name or source, exc.reason)
        else:
            dev = pick_device(device)
            return LoadedTextModel(model=lean_model.eval().to(dev), tokenizer=lean_tok, device=dev,
                                   name=name or source)
    elif backend == "lean":
        raise ModelseekError(f"model {name or source!r}: the lean backend reads local folders only, "
                             f"without a revision")
    from transformers import AutoModel, AutoTokenizer  # lazy: transformers

    dev = pick_device(device)
    _check_snapshot(source, name)
    try:
        with quiet_transformers():  # transformers' load-report table: summarised in one line below
            tok = AutoTokenizer.from_pretrained(source, revision=revision, local_files_only=local_files_only)
            model, info = AutoModel.from_pretrained(source, revision=revision, local_files_only=local_files_only,
                                                    output_loading_info=True)
    except (OSError, ValueError, ImportError, RuntimeError):
        found = snapshot_problem(source)
        if found:
            raise ModelseekError(f"model {name or source!r}: {found}") from None
        raise
    summarise_load_report(name or source, info)
    if getattr(model.config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
        model = model.get_encoder()
    if tok.pad_token_id is None:
        if tok.eos_token is None:
            raise ModelseekError(f"model {name or source!r}: tokenizer has neither a pad nor an eos token")
        tok.pad_token = tok.eos_token
    model.eval().to(dev)
    return LoadedTextModel(model=model, tokenizer=tok, device=dev, name=name or source)


def _check_snapshot(source: str, name: str) -> None:
    """A damaged local snapshot (git-lfs pointers, a SentencePiece tokenizer without its package) named as such."""
    found = snapshot_problem(source)
    if found:
        raise ModelseekError(f"model {name or source!r}: {found}")


def _effective_max_length(tok, model, max_length: int, name: str = "") -> int:
    """``max_length`` lowered to what the model takes (its position table, its tokenizer): :mod:`.limits`."""
    return token_limit(getattr(model, "config", None), tok, max_length, name)


#: a text longer than ``max_length`` x this many characters is cut (at a white space) before it is tokenized
CUT_CHARS_PER_TOKEN = 24
_WHITE = re.compile(r"\s")
_TOKEN_CACHE: OrderedDict[tuple[str, int, str], list[list[int]]] = OrderedDict()
_TOKEN_CACHE_BYTES = [0]
#: how many bytes of token ids the cache keeps (the oldest task's ids leave first)
TOKEN_CACHE_LIMIT = 256 << 20
_TOKEN_LOCK = threading.Lock()


def _head(text: str, max_length: int) -> str:
    """``text`` cut at the last white space before ``max_length`` x :data:`CUT_CHARS_PER_TOKEN` characters (the
    whole text when it is shorter or has no white space there)."""
    limit = max_length * CUT_CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    cut = max((m.start() for m in _WHITE.finditer(text, limit // 2, limit)), default=-1)
    return text[:cut] if cut > 0 else text


def _tokenizer_key(loaded: LoadedTextModel) -> str:
    """What the tokenizer is (its serialised pipeline: normaliser, pre-tokeniser, vocabulary, special tokens), so
    that candidates sharing a tokenizer share its token ids; a tokenizer that cannot be serialised is its own."""
    key = getattr(loaded, "token_key", None)
    if key is None:
        backend = getattr(loaded.tokenizer, "backend_tokenizer", None)
        try:
            key = hashlib.sha256(backend.to_str().encode("utf-8")).hexdigest() if backend is not None else None
        except Exception:  # noqa: BLE001 - an unserialisable tokenizer is only not shared
            key = None
        key = key or f"object {id(loaded.tokenizer)}"
        loaded.token_key = key
    return key


def token_ids(loaded: LoadedTextModel, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """The token ids of ``texts`` truncated to ``max_length`` — computed once per tokenizer and list of texts
    (the candidates of one family share them; an LRU of :data:`TOKEN_CACHE_LIMIT` bytes keeps them).

    Why by hand: a fast tokenizer reads the whole text before it truncates, so a 2,000-word text costs eight
    times what its first 256 tokens need. Each long text is therefore cut at a white space after
    ``max_length`` x :data:`CUT_CHARS_PER_TOKEN` characters first; the pre-tokenisers of these models split at
    white space, so the head's tokens are the whole text's, and the head is kept only where it still fills all
    ``max_length`` positions (any other text is tokenized whole): the ids equal the uncut text's."""
    key = (_tokenizer_key(loaded), int(max_length), texts_fingerprint(list(texts)))
    with _TOKEN_LOCK:
        hit = _TOKEN_CACHE.get(key)
        if hit is not None:
            _TOKEN_CACHE.move_to_end(key)
            return hit
    tok = loaded.tokenizer
    kw = {"truncation": True, "max_length": max_length, "padding": False, "return_attention_mask": False,
          "return_token_type_ids": False}
    heads = [_head(t, max_length) for t in texts]
    ids = list(tok(heads, **kw)["input_ids"])
    short = [i for i, (h, t) in enumerate(zip(heads, texts)) if len(h) < len(t) and len(ids[i]) < max_length]
    if short:  # the head did not fill the positions: the whole text decides
        for i, row in zip(short, tok([texts[i] for i in short], **kw)["input_ids"]):
            ids[i] = row
    size = sum(len(r) for r in ids) * 8 + 64 * len(ids)
    with _TOKEN_LOCK:
        _TOKEN_CACHE[key] = ids
        _TOKEN_CACHE_BYTES[0] += size
        while _TOKEN_CACHE_BYTES[0] > TOKEN_CACHE_LIMIT and len(_TOKEN_CACHE) > 1:
            _, old = _TOKEN_CACHE.popitem(last=False)
            _TOKEN_CACHE_BYTES[0] -= sum(len(r) for r in old) * 8 + 64 * len(old)
    return ids


def clear_token_cache() -> None:
    """Forget the token ids :func:`token_ids` keeps."""
    with _TOKEN_LOCK:
        _TOKEN_CACHE.clear()
        _TOKEN_CACHE_BYTES[0] = 0


def _batches(loaded: LoadedTextModel, texts: Sequence[str], max_length: int, batch_size: int, progress: bool,
             what: str = "features"):
    """Yield (indices, input_ids, attention_mask) on the device: texts tokenized once, sorted by length
    (longest first), each batch padded only to its own longest text."""
    import torch  # lazy: torch


    tok, dev = loaded.tokenizer, loaded.device
    n = len(texts)
    ml = _effective_max_length(tok, loaded.model, max_length, loaded.name)
    ids = token_ids(loaded, texts, ml)
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
    order = np.argsort(-lengths, kind="stable")
    pad_id = int(tok.pad_token_id)
    starts = range(0, n, batch_size)
    for start in progress_bar(starts, desc=f"{what} {loaded.name}", total=len(starts), disable=not progress):
        idx = order[start:start + batch_size]
        width = int(lengths[idx[0]])
        input_ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(idx), width), dtype=torch.long)
        for row, i in enumerate(idx):
            L = int(lengths[i])
            input_ids[row, :L] = torch.as_tensor(ids[i], dtype=torch.long)
            mask[row, :L] = 1
        yield idx, input_ids.to(dev), mask.to(dev)


def _forward(loaded: LoadedTextModel, **inputs):
    """The model call, under bf16/fp16 autocast on CUDA."""
    import torch  # lazy: torch

    dev = loaded.device
    if dev.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        with torch.autocast(device_type="cuda", dtype=dtype):
            return loaded.model(**inputs)
    return loaded.model(**inputs)


def encode(loaded: LoadedTextModel, texts: Sequence[str], *, pooling: str | Pooling = "mean",
           layer: str | int = "last", max_length: int = 256, batch_size: int = 32,
           progress: bool = True) -> np.ndarray:
    """Features of ``texts`` with an already loaded model (no cache). float32, original order."""
    import torch  # lazy: torch

    pooling = Pooling.parse(pooling)
    layer = parse_layer(layer)
    model = loaded.model
    n = len(texts)
    hidden = int(getattr(model.config, "hidden_size", 0) or getattr(model.config, "d_model", 0))
    if n == 0:
        return np.empty((0, hidden), dtype=np.float32)
    n_layers = int(getattr(model.config, "num_hidden_layers", 0) or 0)
    if isinstance(layer, int) and n_layers and not -(n_layers + 1) <= layer <= n_layers:
        raise InputError(f"layer {layer} out of range for {loaded.name!r} (hidden states 0..{n_layers})",
                         field="layer")
    need_hidden = layer != "last"
    out: np.ndarray | None = None
    with torch.inference_mode():
        for idx, input_ids, mask in _batches(loaded, texts, max_length, batch_size, progress):
            res = _forward(loaded, input_ids=input_ids, attention_mask=mask, output_hidden_states=need_hidden)
            if layer == "last":
                states = [res.last_hidden_state if hasattr(res, "last_hidden_state") else res[0]]
            elif layer in ("mean", "all"):
                states = list(res.hidden_states[1:]) or [res.hidden_states[0]]
            else:
                try:
                    states = [res.hidden_states[layer]]
                except IndexError:
                    raise InputError(f"layer {layer} out of range for {loaded.name!r} "
                                     f"({len(res.hidden_states)} hidden states)", field="layer") from None
            m = mask.unsqueeze(-1).float()
            denom = m.sum(1).clamp_min(1.0)
            per = [(h.float()[:, 0] if pooling is Pooling.CLS else (h.float() * m).sum(1) / denom) for h in states]
            if layer == "all":  # N x L x H: each layer's pooled vector
                pooled = torch.stack(per, 1).cpu().numpy()
            else:
                total = per[0]
                for v in per[1:]:
                    total = total + v
                pooled = (total / len(states)).cpu().numpy()
            if out is None:
                out = np.empty((n, *pooled.shape[1:]), dtype=np.float32)
            out[idx] = pooled
    assert out is not None  # n > 0 texts: at least one batch
    return out


def _load_head_model(source: str, revision: str | None, device: str, name: str = "",
                     local_files_only: bool = False) -> LoadedTextModel:
    """Tokenizer and sequence-classification model; refuses a checkpoint without a trained head."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer  # lazy: transformers

    lfo = {"local_files_only": local_files_only}
    _check_snapshot(source, name)
    cfg = AutoConfig.from_pretrained(source, revision=revision, **lfo)
    archs = list(getattr(cfg, "architectures", None) or [])
    if not any(a.endswith("ForSequenceClassification") for a in archs):
        raise ModelseekError(f"model {name or source!r} carries no sequence-classification head "
                             f"(architectures: {', '.join(archs) or 'none'}); leep/nce need one")
    dev = pick_device(device)
    with quiet_transformers():
        tok = AutoTokenizer.from_pretrained(source, revision=revision, **lfo)
        model, info = AutoModelForSequenceClassification.from_pretrained(
            source, revision=revision, output_loading_info=True, local_files_only=local_files_only)
    summarise_load_report(name or source, info)
    if tok.pad_token_id is None:
        if tok.eos_token is None:
            raise ModelseekError(f"model {name or source!r}: tokenizer has neither a pad nor an eos token")
        tok.pad_token = tok.eos_token
    model.config.pad_token_id = tok.pad_token_id
    model.eval().to(dev)
    return LoadedTextModel(model=model, tokenizer=tok, device=dev, name=name or source)


def head_probs(loaded: LoadedTextModel, texts: Sequence[str], *, max_length: int = 256, batch_size: int = 32,
               progress: bool = True) -> np.ndarray:
    """Softmax of the classification head over its source classes (float32, original order)."""
    import torch  # lazy: torch

    n_out = int(loaded.model.config.num_labels)
    out = np.empty((len(texts), n_out), dtype=np.float32)
    with torch.inference_mode():
        for idx, input_ids, mask in _batches(loaded, texts, max_length, batch_size, progress, what="head"):
            logits = _forward(loaded, input_ids=input_ids, attention_mask=mask).logits.float()
            out[idx] = torch.softmax(logits, dim=-1).cpu().numpy()
    return out


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InputError("texts must be a sequence of strings, not one string")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InputError(f"text {i} is {type(t).__name__}, not str", field=f"texts[{i}]")
    return texts


class TextEncoder:
    """Features of many text lists under one model: cache first, the model loaded on the first miss only.

    ``TextEncoder(model, pooling=..., layer=..., ...)(texts)`` equals ``extract_features(texts, model, ...)``;
    the encoder keeps the loaded model between calls (a ranker encodes many tasks with one candidate) and
    counts ``forward_calls`` (extractions that ran the model) and ``cache_hits``. :meth:`close` frees it.
    ``models``: an optional dict shared between encoders so that candidates reading the same checkpoint in
    different ways (pooling, layer) load it once; its owner decides when to clear it.
    """

    def __init__(self, model: Any, *, pooling: str = "mean", layer: str | int = "last", max_length: int = 256,
                 batch_size: int = 32, device: str = "auto", cache_dir: str | os.PathLike | bool | None = None,
                 revision: str | None = None, progress: bool = True, models: dict | None = None,
                 local_files_only: bool = False, backend: str = "transformers") -> None:
        self.pooling = Pooling.parse(pooling)
        if backend not in BACKENDS:
            raise InputError(f"unknown backend {backend!r}; valid values: {', '.join(BACKENDS)}", field="backend")
        #: how the model is run (see _load_model); the outputs agree, so it is no part of the cache key
        self.backend = backend
        self.layer = parse_layer(layer)
        if int(max_length) < 2:
            raise InputError(f"max_length must be >= 2, got {max_length}", field="max_length")
        if int(batch_size) < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}", field="batch_size")
        self.max_length, self.batch_size = int(max_length), int(batch_size)
        self.device, self.progress = device, progress
        self.source, self.revision, self.name, self._identity = _model_identity(model, revision)
        self.cache = None if cache_dir is False else FeatureCache(None if cache_dir is True else cache_dir)
        self._loaded: LoadedTextModel | None = None
        self._models = models
        #: load from local files only (a Hub id from the local Hugging Face cache): set when the Hub is offline
        self.local_files_only = bool(local_files_only)
        self.forward_calls = 0
        self.cache_hits = 0

    #: what the cached arrays are (part of the key)
    output = "features"

    def _load(self) -> LoadedTextModel:
        return _load_model(self.source, self.revision, self.device, self.name, backend=self.backend,
                           **({"local_files_only": True} if self.local_files_only else {}))

    def _compute(self, loaded: LoadedTextModel, texts: Sequence[str]) -> np.ndarray:
        return encode(loaded, texts, pooling=self.pooling, layer=self.layer, max_length=self.max_length,
                      batch_size=self.batch_size, progress=self.progress)

    def key_fields(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"output": self.output, "model": self._identity, "revision": self.revision,
                "pooling": self.pooling.value, "layer": self.layer, "max_length": self.max_length,
                "texts": texts_fingerprint(texts), "n_texts": len(texts)}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        fields = self.key_fields(texts)
        key = cache_key(fields)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and hit.shape[0] == len(texts):
                self.cache_hits += 1
                log.debug("features of %d texts under %s from cache %s", len(texts), self.name, self.cache.path(key))
                return hit
        loaded = self._loaded
        if loaded is None:
            slot = (self.output, self.source, self.revision, self.device, self.backend)
            if self._models is not None and slot in self._models:
                loaded = self._models[slot]
            else:
                loaded = self._load()
                if self._models is not None:
                    self._models[slot] = loaded
            self._loaded = loaded
        feats = self._compute(loaded, texts)
        self.forward_calls += 1
        if not np.all(np.isfinite(feats)):
            raise ModelseekError(f"model {self.name!r} produced non-finite features")
        if self.cache is not None:
            self.cache.put(key, fields, feats)
        return feats

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    def close(self) -> None:
        self._loaded = None

    def __enter__(self) -> TextEncoder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class HeadProbs(TextEncoder):
    """Like :class:`TextEncoder`, but the softmax outputs of the candidate's classification head (for LEEP and
    NCE); a checkpoint whose config names no ``*ForSequenceClassification`` architecture is refused."""

    output = "head_probs"

    def __init__(self, model: Any, *, max_length: int = 256, batch_size: int = 32, device: str = "auto",
                 cache_dir: str | os.PathLike | bool | None = None, revision: str | None = None,
                 progress: bool = True, models: dict | None = None, local_files_only: bool = False) -> None:
        super().__init__(model, max_length=max_length, batch_size=batch_size, device=device, cache_dir=cache_dir,
                         revision=revision, progress=progress, models=models, local_files_only=local_files_only)

    def _load(self) -> LoadedTextModel:
        return _load_head_model(self.source, self.revision, self.device, self.name,
                                **({"local_files_only": True} if self.local_files_only else {}))

    def _compute(self, loaded: LoadedTextModel, texts: Sequence[str]) -> np.ndarray:
        return head_probs(loaded, texts, max_length=self.max_length, batch_size=self.batch_size,
                          progress=self.progress)


def extract_features(texts: Sequence[str], model: Any, *, pooling: str = "mean", layer: str | int = "last",
                     max_length: int = 256, batch_size: int = 32, device: str = "auto",
                     cache_dir: str | os.PathLike | bool | None = None, revision: str | None = None,
                     progress: bool = True, backend: str = "transformers") -> np.ndarray:
    """Features (float32, one row per text, the caller's order) of ``texts`` under ``model``.

    ``model`` is a Hugging Face id, a local folder, ``package:NAME/sub`` (a folder inside an installed
    Python package) or a :class:`~modelseek.retrieval.data.pool.Candidate` (its path or hf_id and revision; its
    ``options`` are applied by the rankers, not here). ``pooling``: ``mean`` | ``cls``; ``layer``: ``last`` |
    an index into the hidden states | ``mean`` (of all transformer layers). ``cache_dir``: None = the default
    cache (``$MODELSEEK_CACHE/features`` or ``~/.cache/modelseek/features``), a folder, or False for none.
    ``backend``: ``transformers`` | ``lean`` (a plain BERT in a local folder, run without importing
    transformers: :mod:`modelseek.retrieval.features.lean_bert`) | ``auto`` (lean where it applies).
    """
    with TextEncoder(model, pooling=pooling, layer=layer, max_length=max_length, batch_size=batch_size,
                     device=device, cache_dir=cache_dir, revision=revision, progress=progress,
                     backend=backend) as enc:
        return enc(texts)
