"""``timm`` source: ``timm.create_model(name)``. The name may carry a pretrained tag
(``beitv2_base_patch16_224.in1k_ft_in1k``); ``weights`` ``imagenet``/``pretrained`` loads the weights of that
tag (timm's default tag when there is none), another string that is a tag of the architecture loads that
tag's weights, a path loads a local checkpoint, null/``random`` a seeded random init.

Pretrained weights come from the Hugging Face Hub cache when they are there; when they are not and the
machine is offline (``HF_HUB_OFFLINE`` or no network, checked once) the answer is immediate
(:class:`WeightsUnavailable`) instead of timm's download retries.
"""

from __future__ import annotations

from typing import Any

from ....core.errors import InputError
from ....core.kinds import register
from .base import (LoadedModel, ModelSource, Spec, WeightsUnavailable, _first_line, is_default_pretrained,
                   load_state_dict, offline, offline_reason, seeded)


@register("model source")
class TimmSource(ModelSource):
    name = "timm"
    package = "timm"

    def _timm(self):
        return self.module()

    def _name(self, timm, entry, spec: Spec) -> str:
        """The full model name (architecture and tag) whose weights and config are meant."""
        name = spec.arch
        base, _, tag = name.partition(".")
        if not timm.is_model(base):
            self.check_arch(entry, base, timm.list_models())
        w = entry.weights.strip() if entry.weights else ""
        if not tag and w and not spec.random and not spec.weights_file and not is_default_pretrained(w):
            tag = w  # weights named by a tag of the architecture
        full = f"{base}.{tag}" if tag else base
        try:
            timm.get_pretrained_cfg(full)
        except RuntimeError:
            tags = [n.partition(".")[2] for n in timm.list_pretrained(f"{base}.*")]
            raise InputError(f"model {entry.model_name!r}: {tag!r} is not a pretrained tag of {base} "
                             f"(valid: {', '.join(tags) or 'none'})",
                             field="weights" if w == tag else "model_name") from None
        return full

    def _cfg(self, timm, full: str):
        cfg = timm.get_pretrained_cfg(full)
        return cfg.to_dict() if cfg is not None else {}

    def defaults(self, entry) -> dict:
        timm = self._timm()
        spec = Spec.of(entry)
        cfg = self._cfg(timm, self._name(timm, entry, spec))
        out: dict[str, Any] = {}
        size = cfg.get("input_size")
        if size:
            out["input_size"] = (int(size[-2]), int(size[-1]))
        for k in ("mean", "std"):
            if cfg.get(k):
                out[k] = tuple(float(x) for x in cfg[k])
        if cfg.get("interpolation") in ("bicubic", "bilinear", "nearest"):
            out["interpolation"] = cfg["interpolation"]
        if cfg.get("crop_pct"):
            out["crop_pct"] = float(cfg["crop_pct"])
        return out

    def _local_file(self, cfg: dict) -> str | None:
        """The pretrained file in the local Hugging Face cache, if it is there."""
        repo = cfg.get("hf_hub_id")
        if not repo:
            return None
        try:
            from huggingface_hub import try_to_load_from_cache  # lazy: huggingface_hub
        except ImportError:
            return None
        repo, _, revision = repo.partition("@")
        files = [cfg["hf_hub_filename"]] if cfg.get("hf_hub_filename") else ["model.safetensors",
                                                                            "pytorch_model.bin"]
        for f in files:
            hit = try_to_load_from_cache(repo, f, revision=revision or None)
            if isinstance(hit, str):
                return hit
        return None

    def build(self, entry, spec) -> LoadedModel:
        timm = self._timm()
        full = self._name(timm, entry, spec)
        create = timm.create_model
        if spec.random or spec.weights_file:
            try:
                module = seeded(lambda: create(full, pretrained=False, **spec.params), spec.seed)
            except TypeError as exc:
                raise InputError(f"model {entry.model_name!r}: {exc}", field="model_parameters") from None
            note = f"random (seed {spec.seed})"
            if spec.weights_file:
                load_state_dict(module, spec.weights_file, entry.model_name)
                note = f"checkpoint {spec.weights_file}"
            return LoadedModel(entry, module, self.std_call(module, spec), weights_note=note)
        cfg = self._cfg(timm, full)
        local = self._local_file(cfg)
        overlay = {"file": local} if local else None
        if local is None and offline():
            raise WeightsUnavailable(f"model {entry.model_name!r}: pretrained weights of {full} cannot be fetched: "
                                     f"{offline_reason()} and not in the Hugging Face cache", field="weights")
        try:
            module = create(full, pretrained=True, pretrained_cfg_overlay=overlay, **spec.params)
        except TypeError as exc:
            raise InputError(f"model {entry.model_name!r}: {exc}", field="model_parameters") from None
        except (OSError, RuntimeError, ValueError) as exc:  # download / hub errors, a corrupt file
            raise WeightsUnavailable(f"model {entry.model_name!r}: pretrained weights of {full} cannot be loaded: "
                                     f"{_first_line(exc)}", field="weights") from None
        return LoadedModel(entry, module, self.std_call(module, spec),
                           weights_note=f"pretrained {full}" + (" (local cache)" if local else ""))
