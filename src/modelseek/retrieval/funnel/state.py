"""The funnel's record of what it has done: one JSON file in the output folder, rewritten atomically after every
finished unit (the prior, each chunk of feature estimates, each fine-tuning) and verified on read (a SHA-256 of
its body), so an interrupted ``select`` resumes where it stopped and never redoes a finished unit.

It also holds the settings it was made with; a rerun with other settings (another task, pool, budget, feature
method or recipe) is refused, naming the first setting that differs, instead of mixing two funnels."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ...core.errors import InputError
from ...core.io import atomic_write_text, read_text

STATE_VERSION = 1
STAGES = ("prior", "probe", "replay", "features", "finetune")
#: settings a state may change while it holds no work but the prior and the plan: a plan-only run does not lock its
#: folder to its budget (the plan is made again for the new one)
REPLANNABLE = ("budget_s", "reliability")


class FunnelState:
    """``settings`` (fixed), ``spent`` seconds per stage, and each stage's results."""

    def __init__(self, path: Path, settings: dict[str, Any], body: dict[str, Any] | None = None) -> None:
        self.path = path
        self.body = body or {"version": STATE_VERSION, "settings": settings, "spent": {s: 0.0 for s in STAGES},
                             "prior": None, "plan": None, "features": {}, "feature_failures": {},
                             "finetune_order": None, "finetune": {}, "runs": 0}

    @classmethod
    def open(cls, path: str | Path, settings: dict[str, Any]) -> FunnelState:
        path = Path(path)
        if not path.exists():
            return cls(path, settings)
        text = read_text(path, "funnel state")
        digest, _, blob = text.partition("\n")
        try:
            body = json.loads(blob)
        except ValueError as exc:
            raise InputError(f"not a funnel state file ({exc}); remove it or choose another `out`", path=path) from None
        if hashlib.sha256(blob.encode()).hexdigest() != digest.strip() or not isinstance(body, dict):
            raise InputError("funnel state fails its checksum (edited or damaged); remove it or choose another `out`",
                             path=path)
        if body.get("version") != STATE_VERSION:
            raise InputError(f"funnel state version {body.get('version')} (this modelseek writes {STATE_VERSION})",
                             path=path, field="version")
        old = body.get("settings", {})
        differ = {k for k in set(old) | set(settings) if old.get(k) != settings.get(k)}
        if differ and differ <= set(REPLANNABLE) and not (body.get("features") or body.get("feature_failures")
                                                          or body.get("finetune") or body.get("finetune_order")):
            body["settings"], body["plan"] = settings, None
            return cls(path, settings, body)
        for key in sorted(set(old) | set(settings)):
            if old.get(key) != settings.get(key):
                raise InputError(f"this output folder holds a funnel made with {key}={old.get(key)!r}, not "
                                 f"{settings.get(key)!r}; choose another `out` to start a new one", path=path,
                                 field=key)
        return cls(path, settings, body)

    def save(self) -> None:
        """Line 1: the SHA-256 of the rest; the rest: the body as JSON (one serialisation, one atomic write)."""
        blob = json.dumps(self.body, sort_keys=True, separators=(",", ":"))
        atomic_write_text(self.path, hashlib.sha256(blob.encode()).hexdigest() + "\n" + blob)

    # ------------------------------------------------------------------ accounting
    @property
    def spent_s(self) -> float:
        return float(sum(self.body["spent"].values()))

    def add_spent(self, stage: str, seconds: float) -> None:
        self.body["spent"][stage] = float(self.body["spent"].get(stage, 0.0)) + float(seconds)

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.body[key] = value
