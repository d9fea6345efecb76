"""How many tokens a text model takes, read from the model itself.

A model's absolute position table bounds the tokens of one text: ``max_position_embeddings`` for BERT, ALBERT,
DistilBERT and ELECTRA; RoBERTa-like models (RoBERTa, XLM-R, CamemBERT, MPNet, Longformer ...) number positions
from ``padding_idx + 1``, so they take ``max_position_embeddings - padding_idx - 1`` tokens (roberta-base: 514 - 1
- 1 = 512). DeBERTa without ``position_biased_input`` (every DeBERTa checkpoint of the NTCIR pool) and T5-like
models use relative positions and have no absolute table. The tokenizer's ``model_max_length`` bounds it too, when
the tokenizer sets one (many snapshots leave it unset, a huge number).

:func:`token_limit` combines both with the length asked for; a length asked beyond the model's table is lowered
to it and said once per model (a warning through :mod:`logging`), for frozen features and fine-tuning alike,
instead of the tensor size error the forward pass would raise.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

#: model types whose position ids start at ``padding_idx + 1`` (transformers' create_position_ids_from_input_ids)
OFFSET_TYPES = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "data2vec-text",
                          "ibert", "mpnet", "xmod", "roberta-prelayernorm", "luke", "markuplm", "flaubert-roberta"})
#: relative-position encoders whose ``max_position_embeddings`` is no hard bound unless an absolute table is used
_RELATIVE_TYPES = frozenset({"deberta", "deberta-v2"})
#: a tokenizer's model_max_length above this is the "unset" sentinel (transformers uses int(1e30))
_UNSET = 100_000

_said: set[tuple[str, str, int, int]] = set()
_said_lock = threading.Lock()


def position_limit(config: Any) -> int | None:
    """The number of tokens ``config``'s absolute position table holds, or None when none bounds it."""
    model_type = str(getattr(config, "model_type", "") or "")
    if model_type in _RELATIVE_TYPES and not getattr(config, "position_biased_input", True):
        return None
    n = getattr(config, "max_position_embeddings", None)
    if n is None:
        n = getattr(config, "n_positions", None)  # GPT-2 style
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return None
    if model_type in OFFSET_TYPES:
        pad = getattr(config, "pad_token_id", None)
        pad = 1 if not isinstance(pad, int) or pad < 0 else pad
        return max(n - pad - 1, 1)
    return n


def tokenizer_limit(tokenizer: Any) -> int | None:
    mml = getattr(tokenizer, "model_max_length", None)
    if isinstance(mml, (int, float)) and 0 < mml < _UNSET:
        return int(mml)
    return None


def token_limit(config: Any, tokenizer: Any, asked: int, name: str = "") -> int:
    """``asked`` lowered to what the model takes (its position table and its tokenizer's ``model_max_length``).

    When the position table is what lowers it, a warning says so once per model and length in this process."""
    limit = int(asked)
    table = position_limit(config)
    tok = tokenizer_limit(tokenizer)
    if tok is not None:
        limit = min(limit, tok)
    if table is not None and table < limit:
        key = (name, str(getattr(config, "_name_or_path", "") or ""), int(asked), table)
        with _said_lock:
            first = key not in _said
            _said.add(key)
        if first:
            offset = (" (its max_position_embeddings less the padding offset)"
                      if str(getattr(config, "model_type", "")) in OFFSET_TYPES else "")
            log.warning("model %s takes at most %d tokens%s: max_length %d lowered to %d",
                        name or "?", table, offset, int(asked), table)
        limit = table
    return limit


__all__ = ["OFFSET_TYPES", "position_limit", "token_limit", "tokenizer_limit"]
