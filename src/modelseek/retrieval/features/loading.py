"""Loading a Hugging Face snapshot, said in modelseek's words.

* :func:`summarise_load_report`: transformers prints a table of the checkpoint's missing and unexpected weights for
  every model loaded under another head (a masked-LM checkpoint read as a bare encoder: its ``lm_head`` unused, its
  ``pooler`` new) — hundreds of lines over a pool of real snapshots. The table is silenced while loading
  (:func:`quiet_transformers`) and summarised here in one line per model: at ``INFO`` when only heads and poolers
  differ (expected: frozen features and fine-tuning use neither), as a warning when encoder weights are missing
  (the features would come from random weights).
* :func:`snapshot_problem` / :func:`describe_load_error`: a damaged snapshot named for what it is — a git-lfs pointer
  file where the weights or the tokenizer should be (a clone without ``git lfs pull``), a SentencePiece tokenizer
  (``spiece.model``, ``sentencepiece.bpe.model``) without ``tokenizer.json`` on a machine without the
  ``sentencepiece`` package — instead of the library's own message ("header too large", "install tiktoken").
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_LFS_MAGIC = b"version https://git-lfs.github.com/spec/"
#: weight and tokenizer files a snapshot loads (a pointer in any of them is a damaged snapshot)
_LOADED_SUFFIXES = (".safetensors", ".bin", ".model", ".json", ".txt", ".pt", ".h5", ".msgpack")
_SENTENCEPIECE_FILES = ("spiece.model", "sentencepiece.bpe.model", "sentencepiece.model", "spm.model")
#: weight-name parts that belong to a head or a pooler, not to the encoder
_HEAD_PARTS = ("lm_head", "cls.", "classifier", "pre_classifier", "qa_outputs", "pooler", "vocab_", "predictions",
               "score.", "lm_loss", "mask_predictions", "sop_classifier", "seq_relationship", "generator_lm_head",
               "vocab_projector", "vocab_transform", "vocab_layer_norm")


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report and progress bars while loading; restore them after. Safe across threads
    (candidates loaded in parallel): the first to enter silences, the last to leave restores."""
    from transformers.utils import logging as tlog  # lazy: transformers

    with _QUIET_LOCK:
        if _QUIET["depth"] == 0:
            _QUIET["saved"] = (tlog.get_verbosity(), tlog.is_progress_bar_enabled())
            tlog.set_verbosity_error()
            tlog.disable_progress_bar()
        _QUIET["depth"] += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _QUIET["depth"] -= 1
            if _QUIET["depth"] == 0:
                level, bars = _QUIET["saved"]
                tlog.set_verbosity(level)
                if bars:
                    tlog.enable_progress_bar()


_QUIET_LOCK = threading.Lock()
_QUIET: dict[str, Any] = {"depth": 0, "saved": None}


def _is_head(key: str) -> bool:
    return any(part in key for part in _HEAD_PARTS)


def summarise_load_report(name: str, info: Mapping[str, Any] | None, ignore_head: bool = True) -> str:
    """One line for transformers' loading info (``output_loading_info=True``); logged, and returned."""
    if not info:
        return ""
    missing = list(info.get("missing_keys") or [])
    unexpected = list(info.get("unexpected_keys") or [])
    mismatched = list(info.get("mismatched_keys") or [])
    enc_missing = [k for k in missing if not _is_head(k)]
    parts = []
    if unexpected:
        parts.append(f"{len(unexpected)} checkpoint weight(s) unused ({_groups(unexpected)})")
    if missing:
        parts.append(f"{len(missing)} new ({_groups(missing)})")
    if mismatched:
        parts.append(f"{len(mismatched)} of another shape replaced ({_groups([m[0] for m in mismatched])})")
    if not parts:
        return ""
    line = f"model {name}: loaded; " + "; ".join(parts)
    if enc_missing:
        log.warning("%s: encoder weights missing from the checkpoint were initialised at random", line)
    else:
        log.info("%s (heads and poolers only: expected)", line)
    return line


def _groups(keys: list[str]) -> str:
    """``lm_head.dense.weight, lm_head.bias, pooler.dense.weight`` -> ``lm_head, pooler``."""
    seen: dict[str, None] = {}
    for k in keys:
        head = k.split(".")[0]
        seen.setdefault(head if head not in ("bert", "roberta", "distilbert", "albert", "deberta") else
                        ".".join(k.split(".")[:2]), None)
    names = list(seen)
    return ", ".join(names[:4]) + (f", +{len(names) - 4}" if len(names) > 4 else "")


def lfs_pointer(path: Path) -> bool:
    """Whether ``path`` is a git-lfs pointer file (a clone whose large files were never fetched)."""
    try:
        if path.stat().st_size > 1024:
            return False
        with open(path, "rb") as fh:
            return fh.read(len(_LFS_MAGIC)) == _LFS_MAGIC
    except OSError:
        return False


def snapshot_problem(folder: str | os.PathLike) -> str | None:
    """What is wrong with a local model folder that would make it fail to load, in words; None when nothing is seen.
    Only local folders are inspected (a Hub id is the Hub's business)."""
    path = Path(folder)
    if not path.is_dir():
        return None
    try:
        files = sorted(p for p in path.iterdir() if p.is_file())
    except OSError:
        return None
    pointers = [p.name for p in files if p.suffix in _LOADED_SUFFIXES and lfs_pointer(p)]
    if pointers:
        return (f"{', '.join(pointers)} in {path} {'is an' if len(pointers) == 1 else 'are'} un-fetched git-lfs "
                f"pointer{'s' if len(pointers) > 1 else ''}, not the file{'s' if len(pointers) > 1 else ''} "
                f"(run `git lfs pull` in the clone, or download the snapshot again)")
    names = {p.name for p in files}
    sp = [n for n in _SENTENCEPIECE_FILES if n in names]
    if sp and "tokenizer.json" not in names and importlib.util.find_spec("sentencepiece") is None:
        return (f"{path}: its tokenizer is SentencePiece ({sp[0]}, no tokenizer.json) and the sentencepiece package "
                f"is not installed (pip install sentencepiece)")
    return None


def describe_load_error(source: str | os.PathLike, exc: BaseException) -> str:
    """One line for a failed load: the snapshot's damage when one is seen, else the library's first line."""
    found = snapshot_problem(source)
    if found:
        return found
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


__all__ = ["describe_load_error", "lfs_pointer", "quiet_transformers", "snapshot_problem", "summarise_load_report"]
