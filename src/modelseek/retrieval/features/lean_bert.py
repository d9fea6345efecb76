"""A lean forward pass for BERT-architecture encoders, loaded without ``transformers``.

Why by hand: on a 2-core machine, importing ``transformers`` 5 and its BERT classes costs about 4 s of module
imports (torch._dynamo, torch.distributed, the loss and generation packages) before a single text is encoded —
40% of the cold-start budget of ``modelseek rank`` (issue 13), whose task representation is one small BERT
(all-MiniLM-L6-v2). A BERT encoder's inference is a dozen ``torch.nn.functional`` calls, so this module runs
that computation itself and reads the very same files with the libraries ``transformers`` reads them with:
``config.json`` (json), ``model.safetensors`` (``safetensors``) and ``tokenizer.json`` (``tokenizers``, the
Rust tokenizer behind every "fast" Hugging Face tokenizer).

It is used only where it computes what ``transformers`` computes: :func:`unsupported_reason` accepts a plain
encoder (``model_type`` bert, absolute positions, gelu/relu, no decoder or cross-attention, every weight
present under the names BertModel uses) and refuses anything else, which then loads through ``transformers``.
Tests compare token ids and hidden states against ``transformers``' BertModel on the shipped MiniLM and on
random tiny configurations (``save_pretrained``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.errors import ModelseekError
from ...core.io import read_json  # the one strict reader: any nesting, any number, bytes that are not UTF-8

CONFIG, WEIGHTS = "config.json", "model.safetensors"
TOKENIZER, TOKENIZER_CONFIG = "tokenizer.json", "tokenizer_config.json"
_ACTIVATIONS = ("gelu", "relu")
#: weight-name prefixes under which a BERT encoder is saved (BertModel, Bert*For* task models)
_PREFIXES = ("", "bert.")


def _layer_names(i: int) -> list[str]:
    p = f"encoder.layer.{i}."
    return [p + n for n in (
        "attention.self.query.weight", "attention.self.query.bias", "attention.self.key.weight",
        "attention.self.key.bias", "attention.self.value.weight", "attention.self.value.bias",
        "attention.output.dense.weight", "attention.output.dense.bias", "attention.output.LayerNorm.weight",
        "attention.output.LayerNorm.bias", "intermediate.dense.weight", "intermediate.dense.bias",
        "output.dense.weight", "output.dense.bias", "output.LayerNorm.weight", "output.LayerNorm.bias")]


_EMBEDDINGS = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
               "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"]


def _read_json(path: Path) -> dict:
    data = read_json(path, "model config")
    if not isinstance(data, dict):
        raise ModelseekError(f"{path}: expected a JSON object")
    return data


def _weight_prefix(folder: Path, n_layers: int) -> str | None:
    from safetensors import safe_open  # lazy: safetensors

    try:
        with safe_open(str(folder / WEIGHTS), "pt") as fh:
            keys = set(fh.keys())
    except Exception:  # noqa: BLE001 - a damaged file: the transformers path reports it in its own words
        return None
    needed = _EMBEDDINGS + [n for i in range(n_layers) for n in _layer_names(i)]
    for prefix in _PREFIXES:
        if all(prefix + n in keys for n in needed):
            return prefix
    return None


class Unsupported(ModelseekError):
    """A folder the lean path does not run; ``reason`` says why."""

    def __init__(self, folder: str | Path, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{folder}: not a plain BERT encoder the lean path runs ({reason})")


def _inspect(source: str | Path) -> tuple[str | None, str | None]:
    """(why the folder is not run here or None, the weight-name prefix when it is)."""
    folder = Path(source)
    if not folder.is_dir():
        return f"{source} is not a local folder", None
    for name in (CONFIG, WEIGHTS, TOKENIZER):
        if not (folder / name).is_file():
            return f"no {name}", None
    try:
        cfg = _read_json(folder / CONFIG)
    except ModelseekError as exc:
        return str(exc), None
    checks = [
        (cfg.get("model_type") == "bert", f"model_type {cfg.get('model_type')!r} is not bert"),
        (cfg.get("position_embedding_type", "absolute") == "absolute", "relative position embeddings"),
        (cfg.get("hidden_act", "gelu") in _ACTIVATIONS, f"activation {cfg.get('hidden_act')!r}"),
        (not cfg.get("is_decoder", False) and not cfg.get("add_cross_attention", False), "a decoder"),
        (not cfg.get("is_encoder_decoder", False), "an encoder-decoder"),
    ]
    for ok, why in checks:
        if not ok:
            return why, None
    try:
        n_layers, hidden, heads = (int(cfg[k]) for k in ("num_hidden_layers", "hidden_size", "num_attention_heads"))
    except (KeyError, TypeError, ValueError):
        return "config lacks num_hidden_layers/hidden_size/num_attention_heads", None
    if n_layers < 1 or heads < 1 or hidden % heads:
        return f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}", None
    prefix = _weight_prefix(folder, n_layers)
    if prefix is None:
        return f"{WEIGHTS} lacks weights under BertModel's names", None
    return None, prefix


def unsupported_reason(source: str | Path) -> str | None:
    """None when ``source`` (a local folder) can run here exactly as ``transformers`` runs it, else why not."""
    return _inspect(source)[0]


# ------------------------------------------------------------------------------------------------ tokenizer
class LeanTokenizer:
    """The subset of a Hugging Face fast tokenizer that :mod:`modelseek.retrieval.features.text` uses, over
    ``tokenizers.Tokenizer.from_file(tokenizer.json)``: the same Rust pipeline (normaliser, pre-tokeniser,
    WordPiece, the [CLS]/[SEP] template), with truncation to ``max_length`` counting the special tokens."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer  # lazy: tokenizers

        try:
            self._tok = Tokenizer.from_file(str(folder / TOKENIZER))
        except Exception as exc:  # noqa: BLE001 - tokenizers raises a plain Exception for any unreadable file
            raise ModelseekError(f"{folder / TOKENIZER}: unreadable tokenizer ({exc})") from None
        self._tok.no_padding()
        self._tok.no_truncation()
        tcfg = _read_json(folder / TOKENIZER_CONFIG) if (folder / TOKENIZER_CONFIG).is_file() else {}
        mml = tcfg.get("model_max_length")
        self.model_max_length = int(mml) if isinstance(mml, (int, float)) and math.isfinite(mml) else int(1e30)
        pad = tcfg.get("pad_token", "[PAD]")
        pad = pad.get("content") if isinstance(pad, dict) else pad
        self.pad_token_id = self._tok.token_to_id(str(pad)) if pad is not None else None
        self._max_length: int | None = None

    def __call__(self, texts: Sequence[str], *, truncation: bool = True, max_length: int | None = None,
                 **_ignored: Any) -> dict:
        if truncation and max_length is not None and max_length != self._max_length:
            self._tok.enable_truncation(int(max_length))
            self._max_length = int(max_length)
        return {"input_ids": [e.ids for e in self._tok.encode_batch(list(texts))]}


# -------------------------------------------------------------------------------------------------- model
@dataclass
class LeanConfig:
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    layer_norm_eps: float
    hidden_act: str
    max_position_embeddings: int


@dataclass
class LeanOutput:
    last_hidden_state: Any
    hidden_states: tuple | None = None

    def __getitem__(self, i: int):
        return (self.last_hidden_state, self.hidden_states)[i]


class LeanBert:
    """BERT encoder inference (``BertModel(...).last_hidden_state`` and ``hidden_states``) in plain torch.

    Called like a ``transformers`` model: ``model(input_ids=..., attention_mask=..., output_hidden_states=...)``.
    Token type ids are all 0 (one segment), as ``transformers`` assumes when none are given."""

    def __init__(self, folder: Path, prefix: str) -> None:
        """``prefix``: the weight-name prefix :func:`load` found (``""`` or ``"bert."``)."""
        import torch  # lazy: torch
        from safetensors.torch import load_file  # lazy: safetensors

        cfg = _read_json(folder / CONFIG)
        self.config = LeanConfig(int(cfg["hidden_size"]), int(cfg["num_hidden_layers"]),
                                 int(cfg["num_attention_heads"]), float(cfg.get("layer_norm_eps", 1e-12)),
                                 str(cfg.get("hidden_act", "gelu")), int(cfg.get("max_position_embeddings", 512)))
        raw = load_file(str(folder / WEIGHTS))
        self._w = {k[len(prefix):]: v.float() for k, v in raw.items() if k.startswith(prefix)}
        self._device = torch.device("cpu")

    def eval(self) -> LeanBert:
        return self

    def to(self, device) -> LeanBert:
        self._w = {k: v.to(device) for k, v in self._w.items()}
        self._device = device
        return self

    def _ln(self, x, name: str):
        import torch.nn.functional as F  # lazy: torch

        return F.layer_norm(x, x.shape[-1:], self._w[name + ".weight"], self._w[name + ".bias"],
                            self.config.layer_norm_eps)

    def _linear(self, x, name: str):
        import torch.nn.functional as F  # lazy: torch

        return F.linear(x, self._w[name + ".weight"], self._w[name + ".bias"])

    def __call__(self, *, input_ids, attention_mask=None, output_hidden_states: bool = False, **_ignored):
        import torch  # lazy: torch
        import torch.nn.functional as F  # lazy: torch

        c, w = self.config, self._w
        batch, length = input_ids.shape
        if length > c.max_position_embeddings:
            raise ModelseekError(f"{length} tokens exceed the model's {c.max_position_embeddings} positions")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        pos = torch.arange(length, device=input_ids.device)
        x = (F.embedding(input_ids, w["embeddings.word_embeddings.weight"])
             + w["embeddings.position_embeddings.weight"][pos][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = self._ln(x, "embeddings.LayerNorm")
        states = [x]
        heads, dh = c.num_attention_heads, c.hidden_size // c.num_attention_heads
        # keys that are padding are masked out; an all-padding row never occurs (every text has [CLS] [SEP])
        keep = attention_mask.bool()[:, None, None, :]
        act = F.gelu if c.hidden_act == "gelu" else F.relu
        for i in range(c.num_hidden_layers):
            p = f"encoder.layer.{i}."

            def split(t):
                return t.view(batch, length, heads, dh).transpose(1, 2)

            q = split(self._linear(x, p + "attention.self.query"))
            k = split(self._linear(x, p + "attention.self.key"))
            v = split(self._linear(x, p + "attention.self.value"))
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            a = a.transpose(1, 2).reshape(batch, length, c.hidden_size)
            x = self._ln(self._linear(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = act(self._linear(x, p + "intermediate.dense"))
            x = self._ln(self._linear(h, p + "output.dense") + x, p + "output.LayerNorm")
            states.append(x)
        return LeanOutput(x, tuple(states) if output_hidden_states else None)


def load(folder: str | Path) -> tuple[LeanBert, LeanTokenizer]:
    """Model and tokenizer of a supported local folder (see :func:`unsupported_reason`)."""
    folder = Path(folder)
    why, prefix = _inspect(folder)
    if why is not None:
        raise Unsupported(folder, why)
    assert prefix is not None  # _inspect finds a weight prefix whenever it finds nothing wrong
    return LeanBert(folder, prefix), LeanTokenizer(folder)
