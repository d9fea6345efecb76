"""The fine-tuning protocol: one (task, model, recipe, seed) job, end to end.

A sequence-classification head on the candidate encoder (``AutoModelForSequenceClassification``),
cross-entropy, AdamW, shuffled batches, early stopping on the validation loss with the best weights
restored, then macro-F1 and accuracy on the test split. Batches are padded to their longest member
(dynamic padding); on a GPU the forward pass runs under bf16 autocast (``Recipe.precision``); gradient
accumulation splits each batch into micro-batches. All randomness (head initialisation, dropout, batch
order) comes from the job's seed, inside a forked RNG so the caller's global state is untouched; on the
CPU, with the same ``cpu_threads``, two runs give bit-identical results.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..data.pool import Candidate
from ..data.task import Split, Task
from ...core.errors import InputError, ModelseekError
from ..features.limits import token_limit
from ..features.loading import describe_load_error, quiet_transformers, snapshot_problem, summarise_load_report
from ..features.text import resolve_source
from ...core.progress import progress_bar
from .metrics import accuracy_from_confusion, macro_f1_from_confusion
from .recipe import PROTOCOL, Device, HeadPolicy, Precision, Recipe
from .stopping import EarlyStopper
from ..features.sources import hub_offline_reason, in_hub_cache, is_hub_source


log = logging.getLogger(__name__)


class CandidateLoadError(ModelseekError):
    """A candidate model or its tokenizer could not be loaded."""


# ------------------------------------------------------------------------------------------ payloads
@dataclass(frozen=True)
class TaskData:
    """The picklable part of a task that a job needs (sent to workers)."""

    task_id: str
    train: Split
    val: Split
    test: Split | None

    @classmethod
    def from_task(cls, task: Task | TaskData) -> TaskData:
        if isinstance(task, TaskData):
            return task
        return cls(task.id, task.train, task.val, task.test)

    @property
    def fingerprint(self) -> str:
        """A hash of the texts and labels of every split (a changed task is a new job)."""
        h = hashlib.sha256()
        for name, sp in (("train", self.train), ("val", self.val), ("test", self.test)):
            h.update(f"\x00{name}\x00".encode())
            if sp is not None:
                for text, label in zip(sp.texts, sp.labels):
                    h.update(text.encode("utf-8") + b"\x1f" + label.encode("utf-8") + b"\x1e")
        return h.hexdigest()[:16]

    def label_names(self) -> list[str]:
        """The classes of the head: the training labels, sorted. Raises :class:`InputError` when the
        validation or test split holds a label absent from train (the model could never predict it)."""
        train = set(self.train.labels)
        if len(train) < 2:
            raise InputError(f"task {self.task_id!r} has {len(train)} class(es) in train; need at least 2",
                             field="labels")
        if len(self.val) == 0:
            raise InputError(f"task {self.task_id!r} has no validation split (early stopping needs one)",
                             field="val")
        for name, sp in (("val", self.val), ("test", self.test or Split())):
            extra = sorted(set(sp.labels) - train)
            if extra:
                shown = ", ".join(repr(x) for x in extra[:5])
                raise InputError(f"task {self.task_id!r}: labels differ between splits: {name} has {shown} "
                                 f"not in train ({len(train)} train labels)", field="labels")
        return sorted(train)


@dataclass(frozen=True)
class ModelSpec:
    """The picklable part of a candidate that a job needs: its id and what ``from_pretrained`` loads."""

    model_id: str
    source: str
    revision: str | None = None

    @classmethod
    def from_candidate(cls, c: Candidate | ModelSpec | str) -> ModelSpec:
        if isinstance(c, ModelSpec):
            return c
        if isinstance(c, str):
            return cls(model_id=c, source=c)
        if not c.source:
            raise InputError(f"candidate {c.id!r} has neither hf_id nor path", field="hf_id")
        return cls(model_id=c.id, source=c.source, revision=c.revision)


@dataclass
class FinetuneResult:
    """What one job produced. ``best_epoch`` is 1-based; ``history`` holds per-epoch train and
    validation losses."""

    f1: float
    accuracy: float
    val_f1: float
    val_accuracy: float
    best_val_loss: float
    test_loss: float
    epochs: int
    best_epoch: int
    stopped_early: bool
    wall_s: float
    train_examples_per_s: float
    seed: int
    device: str
    precision: str
    n_train: int
    n_val: int
    n_test: int
    num_labels: int
    history: list[dict[str, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FinetuneResult:
        return cls(**dict(data))


# ------------------------------------------------------------------------------------------ helpers
def resolve_device(recipe: Recipe) -> str:
    import torch  # lazy: torch

    if recipe.device is Device.CPU:
        return "cpu"
    if recipe.device is Device.CUDA:
        if not torch.cuda.is_available():
            raise InputError("recipe asks for device cuda but no CUDA device is visible", field="device")
        return "cuda"
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_precision(recipe: Recipe, device: str) -> str:
    """``bf16`` only on a CUDA device that supports it; otherwise ``fp32``."""
    import torch  # lazy: torch

    if recipe.precision is Precision.FP32 or device != "cuda":
        return "fp32"
    return "bf16" if torch.cuda.is_bf16_supported() else "fp32"


@contextlib.contextmanager
def _torch_state(recipe: Recipe, seed: int, device: str) -> Iterator[None]:
    """Seed a forked RNG, pin the thread count and deterministic kernels; restore everything after."""
    import torch  # lazy: torch

    threads = torch.get_num_threads()
    det = torch.are_deterministic_algorithms_enabled()
    devices = [torch.cuda.current_device()] if device == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        try:
            if recipe.cpu_threads:
                torch.set_num_threads(recipe.cpu_threads)
            if recipe.deterministic:
                torch.use_deterministic_algorithms(True, warn_only=True)
            yield
        finally:
            torch.set_num_threads(threads)
            torch.use_deterministic_algorithms(det)


_quiet_transformers = quiet_transformers  # silence transformers' load report and progress bars


def _head_modules(net) -> list[tuple[str, Any]]:
    """The modules of a sequence-classification model outside its encoder (``base_model_prefix``): its head."""
    prefix = getattr(net, "base_model_prefix", "")
    return [(name, mod) for name, mod in net.named_children() if name != prefix]


def _fresh_head(net) -> None:
    """Initialise the head anew from the current torch RNG, as the architectures' own ``_init_weights`` do
    (normal(0, initializer_range) weights, zero biases, unit LayerNorms)."""
    import torch  # lazy: torch

    std = float(getattr(net.config, "initializer_range", 0.02) or 0.02)
    with torch.no_grad():
        for _, head in _head_modules(net):
            for mod in head.modules():
                if isinstance(mod, torch.nn.Linear):
                    mod.weight.normal_(0.0, std)
                    if mod.bias is not None:
                        mod.bias.zero_()
                elif isinstance(mod, torch.nn.LayerNorm):
                    mod.weight.fill_(1.0)
                    mod.bias.zero_()


_HEAD_SAID: set[tuple[str, str, int]] = set()


def _say_head(model: ModelSpec, policy: HeadPolicy, checkpoint_head: int | None, n: int, kept: bool) -> None:
    """One line per model and class count about the head it is fine-tuned with (when the checkpoint has one)."""
    key = (model.model_id, model.source, n)
    if checkpoint_head is None or key in _HEAD_SAID:
        return
    _HEAD_SAID.add(key)
    if kept:
        log.info("candidate %s: its own %d-way classification head kept, relabelled with the task's classes "
                 "(head: keep)", model.model_id, n)
    else:
        log.info("candidate %s: a fresh %d-way classification head (head: %s); the checkpoint's own %d-way head "
                 "is not used", model.model_id, n, policy.value, checkpoint_head)


def _offline_problem(src: str, revision: str | None) -> str | None:
    """Why Hub id ``src`` cannot load here (not cached while the Hub is offline), with what to do; else None.
    transformers would say it with an ``OSError`` about connecting to huggingface.co."""

    if not is_hub_source(src) or in_hub_cache(src, revision):
        return None
    reason = hub_offline_reason()
    if reason is None:
        return None
    return (f"not in the local Hugging Face cache and the Hub is offline ({reason}); download it where the Hub is "
            f"reachable (huggingface-cli download {src}) or give a local model folder")


def load_model(model: ModelSpec, label_names: list[str], head: HeadPolicy | str = HeadPolicy.FRESH):
    """Tokenizer and a classification model with a ``len(label_names)``-way head: a fresh one (``head: fresh``,
    the protocol), or under ``head: keep`` the checkpoint's own when its size equals the class count."""
    import os

    policy = HeadPolicy.parse(head, "head")
    try:
        src = os.path.expanduser(resolve_source(model.source))  # package:NAME/sub -> the installed folder
    except ModelseekError as exc:
        raise CandidateLoadError(f"candidate {model.model_id!r}: {exc}") from None
    if (os.path.isabs(src) or src.startswith(".")) and not os.path.isdir(src):
        raise CandidateLoadError(f"candidate {model.model_id!r}: no model folder at {model.source}")
    damage = snapshot_problem(src)
    if damage:
        raise CandidateLoadError(f"candidate {model.model_id!r}: {damage}")
    offline = _offline_problem(src, model.revision)
    if offline:
        raise CandidateLoadError(f"candidate {model.model_id!r} ({model.source}): {offline}")
    n = len(label_names)
    try:
        from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer  # lazy: transformers

        with _quiet_transformers():
            tok = AutoTokenizer.from_pretrained(src, revision=model.revision)
            cfg = AutoConfig.from_pretrained(src, revision=model.revision)
            archs = list(getattr(cfg, "architectures", None) or [])
            own = int(cfg.num_labels) if any(a.endswith("ForSequenceClassification") for a in archs) else None
            net, info = AutoModelForSequenceClassification.from_pretrained(
                src, revision=model.revision, num_labels=n,
                id2label=dict(enumerate(label_names)), label2id={name: i for i, name in enumerate(label_names)},
                ignore_mismatched_sizes=True,  # candidates already fine-tuned carry a head of another size
                output_loading_info=True)
    except Exception as exc:  # any loading failure (missing files, bad config, hub offline ...) is the user's
        raise CandidateLoadError(f"candidate {model.model_id!r} ({model.source}) failed to load: "
                                 f"{describe_load_error(src, exc)}") from exc
    kept = own == n and policy is HeadPolicy.KEEP
    if own is not None and not kept:
        _fresh_head(net)  # the checkpoint's head (or the part of it transformers kept, e.g. RoBERTa's dense layer)
    _say_head(model, policy, own, n, kept)
    summarise_load_report(model.model_id, info, ignore_head=True)
    if tok.pad_token is None:  # decoder-style tokenizers (GPT-2 ...) have no pad token
        tok.pad_token = tok.eos_token or tok.unk_token
    if net.config.pad_token_id is None:
        net.config.pad_token_id = tok.pad_token_id
    return tok, net


class _Encoded:
    """Token ids of one split, unpadded; :meth:`batch` pads a subset to its longest member.

    Padding is done here rather than with ``tokenizer.pad`` (which warns on fast tokenizers and converts
    through Python dicts per batch): the arrays are already token ids, so padding is a fill and a copy.
    """

    def __init__(self, tok, split: Split, label_index: Mapping[str, int], limit: int,
                 pad_to_length: int | None = None) -> None:
        enc = tok(list(split.texts), truncation=True, max_length=limit)
        self.input_ids: list[list[int]] = enc["input_ids"]
        self.token_type_ids: list[list[int]] | None = enc.get("token_type_ids")
        self.labels = np.array([label_index[y] for y in split.labels], dtype=np.int64)
        self.pad_id = int(tok.pad_token_id)
        self.left = getattr(tok, "padding_side", "right") == "left"
        self.lengths = np.array([len(x) for x in self.input_ids])
        self.pad_to_length = min(pad_to_length, limit) if pad_to_length else None

    def __len__(self) -> int:
        return len(self.input_ids)

    def batch(self, idx, device: str) -> dict[str, Any]:
        import torch  # lazy: torch

        width = int(self.lengths[idx].max())
        if self.pad_to_length:
            width = max(width, self.pad_to_length)
        ids = np.full((len(idx), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        type_ids = self.token_type_ids
        types = np.zeros((len(idx), width), dtype=np.int64) if type_ids is not None else None
        for r, i in enumerate(idx):
            n = int(self.lengths[i])
            sl = slice(width - n, width) if self.left else slice(0, n)
            ids[r, sl] = self.input_ids[i]
            mask[r, sl] = 1
            if types is not None and type_ids is not None:
                types[r, sl] = type_ids[i]
        out = {"input_ids": torch.from_numpy(ids).to(device), "attention_mask": torch.from_numpy(mask).to(device)}
        if types is not None:
            out["token_type_ids"] = torch.from_numpy(types).to(device)
        out["labels"] = torch.from_numpy(self.labels[idx]).to(device)
        return out


def _evaluate(net, data: _Encoded, n_classes: int, batch_size: int, device: str, autocast) -> tuple[float, np.ndarray]:
    """Mean cross-entropy and confusion matrix; batches go by length to pad little."""
    import torch  # lazy: torch
    import torch.nn.functional as F  # lazy: torch

    net.eval()
    order = np.argsort(data.lengths, kind="stable")
    total = 0.0
    cm = np.zeros((n_classes, n_classes), dtype=np.int64)
    with torch.no_grad():
        for s in range(0, len(order), batch_size):
            b = data.batch(order[s:s + batch_size], device)
            y = b.pop("labels")
            with autocast():
                logits = net(**b).logits
            logits = logits.float()
            total += float(F.cross_entropy(logits, y, reduction="sum"))
            pred = logits.argmax(dim=-1).cpu().numpy()
            np.add.at(cm, (y.cpu().numpy(), pred), 1)
    return total / max(len(data), 1), cm


# ------------------------------------------------------------------------------------------ the protocol
def _train_epoch(net, opt, train: _Encoded, perm, recipe: Recipe, device: str, autocast) -> float:
    """One epoch over ``train`` in the order ``perm``: an optimiser step per batch of ``recipe.batch_size``,
    gradients accumulated over micro-batches; the summed training loss."""
    import torch.nn.functional as F  # lazy: torch

    train_loss = 0.0
    for s in range(0, len(perm), recipe.batch_size):
        idx = perm[s:s + recipe.batch_size]
        opt.zero_grad(set_to_none=True)
        for m in range(0, len(idx), recipe.micro_batch_size):
            b = train.batch(idx[m:m + recipe.micro_batch_size], device)
            y = b.pop("labels")
            with autocast():
                logits = net(**b).logits
            # sum / full batch size: accumulated micro-batches give the full batch's mean gradient
            loss = F.cross_entropy(logits.float(), y, reduction="sum") / len(idx)
            loss.backward()
            train_loss += float(loss.detach()) * len(idx)
        opt.step()
    return train_loss


def _score_test(net, test: _Encoded | None, n_labels: int, recipe: Recipe, device: str,
                autocast) -> tuple[float, float, float]:
    """(loss, macro-F1, accuracy) of the best epoch on test. A task without a test split (the official test
    tasks: train and val only) is fine-tuned and chosen by validation as always; its test scores are NaN (stored
    as missing), never made up."""
    if test is None:
        return float("nan"), float("nan"), float("nan")
    loss, cm = _evaluate(net, test, n_labels, recipe.eval_batch_size, device, autocast)
    return loss, macro_f1_from_confusion(cm), accuracy_from_confusion(cm)


def finetune(task: Task | TaskData, model: Candidate | ModelSpec | str, recipe: Recipe = PROTOCOL,
             seed: int = 0, progress: bool = False, output_dir: str | None = None) -> FinetuneResult:
    """Fine-tune ``model`` on ``task`` under ``recipe`` with ``seed``; score the best epoch on test (NaN without a
    test split: the ground-truth grid refuses such tasks, verification and the funnel choose by validation F1).

    With ``output_dir`` the fine-tuned model (best epoch) and its tokenizer are saved there.

    Raises :class:`InputError` for a task the protocol cannot run (labels differing between splits ...) and
    :class:`CandidateLoadError` for a model that fails to load.
    """
    import torch  # lazy: torch


    t0 = time.perf_counter()
    data = TaskData.from_task(task)
    spec = ModelSpec.from_candidate(model)
    labels = data.label_names()
    index = {name: i for i, name in enumerate(labels)}
    device = resolve_device(recipe)
    precision = resolve_precision(recipe, device)

    def autocast():
        if precision == "bf16":
            return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    with _torch_state(recipe, seed, device):
        tok, net = load_model(spec, labels, recipe.head)
        net.to(device)
        limit = token_limit(net.config, tok, recipe.max_length, spec.model_id)  # the position table, said once
        train = _Encoded(tok, data.train, index, limit, recipe.pad_to_length)
        val = _Encoded(tok, data.val, index, limit, recipe.pad_to_length)
        test = _Encoded(tok, data.test, index, limit, recipe.pad_to_length) if data.test else None
        opt = torch.optim.AdamW(net.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
        gen = torch.Generator().manual_seed(seed)
        stopper = EarlyStopper(recipe.patience, recipe.min_delta)
        best_state: dict[str, Any] | None = None
        best_val_cm = np.zeros((len(labels), len(labels)), dtype=np.int64)
        history: list[dict[str, float]] = []
        train_time, seen = 0.0, 0
        stopped_early = False
        epochs = progress_bar(range(1, recipe.max_epochs + 1), desc=f"{data.task_id}/{spec.model_id}",
                              total=recipe.max_epochs, disable=not progress)
        for epoch in epochs:
            net.train()
            te = time.perf_counter()
            perm = torch.randperm(len(train), generator=gen).numpy()
            train_loss = _train_epoch(net, opt, train, perm, recipe, device, autocast)
            if device == "cuda":
                torch.cuda.synchronize()
            train_time += time.perf_counter() - te
            seen += len(perm)
            val_loss, val_cm = _evaluate(net, val, len(labels), recipe.eval_batch_size, device, autocast)
            history.append({"epoch": epoch, "train_loss": train_loss / len(train), "val_loss": val_loss})
            stop = stopper.step(val_loss)
            if stopper.improved:
                best_state = {k: v.detach().to("cpu", copy=True) for k, v in net.state_dict().items()}
                best_val_cm = val_cm
            if stop:
                stopped_early = True
                break
        if best_state is not None:  # None only if every validation loss was NaN/inf
            net.load_state_dict(best_state)
        test_loss, test_f1, test_acc = _score_test(net, test, len(labels), recipe, device, autocast)
        if output_dir is not None:
            with _quiet_transformers():
                net.save_pretrained(output_dir)
                tok.save_pretrained(output_dir)
    best_loss = stopper.best_loss
    return FinetuneResult(
        f1=test_f1, accuracy=test_acc,
        val_f1=macro_f1_from_confusion(best_val_cm), val_accuracy=accuracy_from_confusion(best_val_cm),
        best_val_loss=best_loss if math.isfinite(best_loss) else float("nan"), test_loss=test_loss,
        epochs=stopper.epoch, best_epoch=stopper.best_epoch, stopped_early=stopped_early,
        wall_s=time.perf_counter() - t0, train_examples_per_s=seen / train_time if train_time > 0 else 0.0,
        seed=int(seed), device=device, precision=precision, n_train=len(train), n_val=len(val),
        n_test=len(test) if test is not None else 0,
        num_labels=len(labels), history=history)
