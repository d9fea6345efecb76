"""``tupate`` — task embeddings by prompt tuning, then a Transformer that reads [model; task matrix] and
predicts F1 (the NTCIR-19 Model Retrieval paper's proposed method, "TuPaTE").

Two modes build the task matrix (``mode``; ``"auto"``, the default, picks ``published`` when the ``device``
is a GPU and ``approx`` on a CPU):

**mode="published" — the paper's method as published.** ``P`` (= 20) soft prompt vectors are prepended to the
token embeddings at the *input* of the frozen encoder (default ``bert-base-multilingual-uncased``, loaded by
``transformers`` from the Hugging Face cache; ``encoder_path`` a Hub id or a local folder). The sequence
``[p_1..p_P; [CLS] text [SEP]]`` runs through every layer with ordinary two-way attention (text tokens
attend to the prompts and the prompts to the text), and the loss back-propagates through the whole frozen
encoder to the prompts. Only the prompts and a linear classifier on the ``[CLS]`` output learn (AdamW,
lr 1e-3, 20 epochs over all the task's training texts, batches of 16, texts cut at 128 tokens; the
encoder's weights are never updated, its dropout is off). The tuned ``P x H`` prompt matrix is the task
matrix. The ranker network reads the task matrix as it is (``width`` defaults to the encoder's ``H``, 768)
and is trained with MSE on the candidates' macro-F1 (the ground truth's ``f1``). This costs a GPU
(see ``benchmarks/tupate_cost.py``; on a CPU it runs, slowly).

**mode="approx" — a CPU approximation, not the published method.** Full prompt tuning back-propagates
through the whole encoder for every text, which costs minutes per task on a 2-core CPU. Here the prompts
are **read-only**: in each layer they pass through, the prompt tokens attend to themselves and to the text
tokens, but the text tokens do not attend to the prompts. The text's hidden states and keys/values are
therefore computed once per task (one forward pass) and only the ``P`` prompt positions run through the
frozen layers per step. The prompts enter before the last ``pt_layers`` (default 2) layers of the encoder
(default all-MiniLM-L6-v2, shipped offline), and tuning uses ``pt_max_texts`` (default 32,
class-stratified) texts of at most ``pt_max_length`` (48) tokens for ``pt_epochs`` (10, the paper: 20)
epochs. The classifier reads the mean of the prompts' last-layer states; the task matrix is the tuned
prompts minus their (shared, seeded) initial values, projected to ``width`` (64); the ranker is trained on
normalized F1. This works with BERT-style encoders (``BertModel`` layout: all-MiniLM-L6-v2, BERT, ...).
A ranker in this mode logs a warning that says so.

Both modes initialise the prompts from ``P`` seeded rows of the encoder's word embeddings (the same for every
task) and cache each task's matrix on disk under a key of the task's text and labels, the mode, the encoder
(name and config hash) and every tuning hyper-parameter, so the two modes never share a cache entry.

**Ranker.** A learned embedding per candidate (the model vector) and the task matrix rows form the sequence
``[model; t_1..t_P]``, with learned positional embeddings; a 2-layer Transformer encoder reads it and an MLP
on the model position predicts the candidate's F1, trained with MSE (full batch, AdamW). A fitted ranker
records the mode it resolved to; loading it elsewhere keeps that mode (artifacts saved before the modes
existed are ``approx``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from numbers import Integral
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..data.pool import Pool
from ..data.task import Task, TaskSet
from ..data.truth import GroundTruth
from ...core.config import Interval, Options
from ...core.errors import InputError
from ...core.progress import progress_bar
from ..taskrep import read_arrays, resolve_cache_dir, sample_indices, text_hash, write_arrays, _check_task
from ._learned import LearnedRanker
from ...core.kinds import register
from ._torch import NetState, seeded
from .base import Constraints

log = logging.getLogger(__name__)

MODES = ("auto", "published", "approx")
#: the encoder the paper tunes its prompts on
PUBLISHED_ENCODER = "bert-base-multilingual-uncased"
#: per mode, the defaults of the parameters left at None (``pt_max_texts`` 0: every training text;
#: ``pt_layers`` 0: the prompts enter at the input; ``width`` 0: the encoder's hidden size, no projection)
MODE_DEFAULTS: dict[str, dict[str, int]] = {
    "approx": {"pt_epochs": 10, "pt_max_texts": 32, "pt_max_length": 48, "pt_layers": 2, "width": 64},
    "published": {"pt_epochs": 20, "pt_max_texts": 0, "pt_max_length": 128, "pt_layers": 0, "width": 0},
}
APPROX_NOTE = ("tupate runs its CPU approximation (mode 'approx'): read-only prompts entering the last {layers} "
               "layer(s), {texts} texts, {epochs} epochs, not the paper's full prompt tuning; mode='published' "
               "(a GPU) follows the paper")


def default_encoder_path() -> str:
    from ..features.text import offline_minilm_path  # lazy: start-up

    return str(offline_minilm_path())


def resolve_mode(mode: str, device: str = "auto") -> str:
    """``published`` or ``approx`` for ``mode`` on ``device`` (``auto``: published on a GPU, approx on a CPU)."""
    if mode not in MODES:
        raise InputError(f"tupate: mode must be one of {', '.join(MODES)}, got {mode!r}", field="mode")
    if mode != "auto":
        return mode
    from ..features.text import pick_device  # lazy: start-up

    return "approx" if pick_device(device).type == "cpu" else "published"


def _encoder_tag(source: str) -> str:
    """``name/<config hash>`` of a local folder or a cached Hub model (for cache keys)."""
    cfg = Path(source) / "config.json"
    if not cfg.exists():
        try:
            from huggingface_hub import try_to_load_from_cache  # lazy: huggingface_hub

            found = try_to_load_from_cache(source, "config.json")
            cfg = Path(found) if isinstance(found, str) else cfg
        except Exception as exc:  # noqa: BLE001 - a malformed id has no cached config
            log.debug("no cached config for %s: %s", source, exc)
    tag = hashlib.sha256(cfg.read_bytes()).hexdigest()[:12] if cfg.exists() else "uncached"
    return f"{Path(source).name if Path(source).is_dir() else source}/{tag}"


def _hidden_size(model) -> int:
    cfg = model.config
    return int(getattr(cfg, "hidden_size", 0) or getattr(cfg, "dim", 0) or getattr(cfg, "d_model", 0))


def bert_style(model) -> bool:
    """Whether ``model`` has the BERT layout the CPU approximation reaches into (``encoder.layer[i].attention.self``
    with query/key/value projections, embeddings with token types and a LayerNorm): BERT, RoBERTa, XLM-R, ELECTRA;
    not ALBERT (shared layer groups), DistilBERT (``transformer.layer``) or DeBERTa (disentangled attention)."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    emb = getattr(model, "embeddings", None)
    if not layers or emb is None or not hasattr(emb, "token_type_embeddings") or not hasattr(emb, "LayerNorm"):
        return False
    att = getattr(getattr(layers[0], "attention", None), "self", None)
    return all(hasattr(att, n) for n in ("query", "key", "value")) and hasattr(layers[0], "intermediate")


class NotBertStyle(InputError):
    """The CPU approximation's encoder is not BERT-style (see :func:`bert_style`)."""


def _load_encoder(source: str, local_files_only: bool = False):
    """Tokenizer and encoder through transformers, its load report summarised in one line; a damaged snapshot
    (git-lfs pointers, SentencePiece without its package) named as such."""
    from transformers import AutoModel, AutoTokenizer  # lazy: transformers

    from ..features.loading import quiet_transformers, snapshot_problem, summarise_load_report  # lazy: start-up

    found = snapshot_problem(source)
    if found:
        raise InputError(f"tupate: encoder {found}", field="encoder_path")
    try:
        with quiet_transformers():
            tok = AutoTokenizer.from_pretrained(source, local_files_only=local_files_only)
            model, info = AutoModel.from_pretrained(source, local_files_only=local_files_only,
                                                    output_loading_info=True)
    except (OSError, ValueError, ImportError) as exc:
        raise InputError(f"tupate: cannot load encoder {source!r}: {exc}", field="encoder_path") from None
    summarise_load_report(Path(source).name if Path(source).is_dir() else source, info)
    return tok, model


def pool_encoder(pool) -> str | None:
    """The folder of the published encoder (``bert-base-multilingual-uncased``, the NTCIR candidate 4) among a
    pool's local candidates: the organisers' ``data/models/04`` after ``download_models``."""
    from ..profiles import canonical_hf_id, folder_identity  # lazy: start-up

    for c in pool or ():
        path = getattr(c, "path", None)
        if not path or str(path).startswith("package:") or not (Path(path) / "config.json").is_file():
            continue
        names = {canonical_hf_id(getattr(c, "hf_id", "") or "").lower(), folder_identity(path).lower()}
        if PUBLISHED_ENCODER in names:
            return str(path)
    return None


@contextlib.contextmanager
def _seeded_on(seed: int, device):
    """Torch's RNGs (the CPU's and, on CUDA, that device's) seeded for a block and restored afterwards."""
    import torch  # lazy: torch

    devices = []
    if getattr(device, "type", "cpu") == "cuda":
        devices = [device.index if device.index is not None else torch.cuda.current_device()]
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield


class PromptTuner:
    """The CPU approximation (``mode="approx"``): read-only prompt tuning before the last ``layers`` layers of a
    frozen BERT-style encoder (see the module docstring). Not the published method."""

    mode = "approx"

    def __init__(self, encoder_path: str, n_prompts: int = 20, epochs: int = 10, lr: float = 1e-3,
                 batch_size: int = 16, max_texts: int = 32, max_length: int = 48, layers: int = 2,
                 seed: int = 0) -> None:
        import torch  # lazy: torch

        self.path = str(encoder_path)
        self.tok, model = _load_encoder(self.path)
        self.model = model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        if not bert_style(self.model):
            raise NotBertStyle(f"tupate's CPU approximation needs a BERT-style encoder (encoder.layer[...]); got "
                               f"{type(self.model).__name__}", path=self.path)
        self.n_prompts, self.epochs, self.lr = int(n_prompts), int(epochs), float(lr)
        self.batch_size, self.max_texts = int(batch_size), int(max_texts)
        self.max_length, self.seed = int(max_length), int(seed)
        n_layers = len(self.model.encoder.layer)
        self.layers = n_layers if int(layers) <= 0 else min(int(layers), n_layers)
        self.first = n_layers - self.layers  # prompts enter before this layer
        emb = self.model.embeddings.word_embeddings.weight
        # word rows past the first 1,000 (special and rare tokens in BERT vocabularies); a small vocabulary (a
        # tokenizer trained on few texts) starts from its second half, as the published tuner does
        lo = 1000 if emb.shape[0] >= 1000 + self.n_prompts else min(1000, emb.shape[0] // 2)
        ids = np.random.default_rng(self.seed).choice(np.arange(lo, emb.shape[0]), self.n_prompts, replace=False)
        self.init = emb[torch.from_numpy(ids)].detach().clone()  # (P, H), the same for every task
        cfg = Path(self.path) / "config.json"
        tag = hashlib.sha256(cfg.read_bytes()).hexdigest()[:12] if cfg.exists() else Path(self.path).name
        self.name = f"{Path(self.path).name}/{tag}"

    def key(self, task: Task) -> str:
        return text_hash(task, "tupate-prompts", self.name, self.n_prompts, self.epochs, self.lr, self.batch_size,
                         self.max_texts, self.max_length, self.layers, self.seed)

    def _text_states(self, texts: list[str]):
        """Per layer: (keys, values) of the text tokens, split by head; plus the padding mask."""
        import torch  # lazy: torch

        enc = self.tok(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        with torch.no_grad():
            out = self.model(**enc, output_hidden_states=True)
            kv = []
            for layer, h in zip(self.model.encoder.layer[self.first:], out.hidden_states[self.first:-1]):
                att = layer.attention.self
                kv.append((self._heads(att.key(h), att), self._heads(att.value(h), att)))
        return kv, enc["attention_mask"].bool()

    def _heads(self, x, att):
        b, t, _ = x.shape
        n = self.model.config.num_attention_heads
        return x.view(b, t, n, -1).transpose(1, 2)  # (B, heads, T, dh)

    def _prompt_pass(self, prompts, kv, mask):
        """Run the prompt positions through the frozen layers, attending to [prompts; text]."""
        import torch  # lazy: torch

        emb = self.model.embeddings
        b = mask.shape[0]
        p = emb.LayerNorm(prompts + emb.token_type_embeddings.weight[0])[None].expand(b, -1, -1)
        bias = torch.cat([torch.zeros(b, self.n_prompts), (~mask).float() * -1e9], dim=1)[:, None, None, :]
        for layer, (tk, tv) in zip(self.model.encoder.layer[self.first:], kv):
            att = layer.attention.self
            q, k, v = self._heads(att.query(p), att), self._heads(att.key(p), att), self._heads(att.value(p), att)
            k, v = torch.cat([k, tk], dim=2), torch.cat([v, tv], dim=2)
            w = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 + bias, dim=-1)
            ctx = (w @ v).transpose(1, 2).reshape(b, self.n_prompts, -1)
            a = layer.attention.output.LayerNorm(layer.attention.output.dense(ctx) + p)
            p = layer.output.LayerNorm(layer.output.dense(layer.intermediate(a)) + a)
        return p

    def describe(self) -> str:
        return APPROX_NOTE.format(layers=self.layers, texts=self.max_texts, epochs=self.epochs)

    def tune(self, task: Task, progress: bool = False) -> np.ndarray:
        """The ``P x H`` task matrix (tuned prompts minus their initial values)."""
        import torch  # lazy: torch
        from torch import nn  # lazy: torch


        idx = sample_indices(task.train.labels, self.max_texts, self.seed)
        texts = [task.train.texts[i] for i in idx]
        classes = {c: i for i, c in enumerate(dict.fromkeys(task.train.labels))}
        y = torch.tensor([classes[task.train.labels[i]] for i in idx])
        kv, mask = self._text_states(texts)
        with seeded(self.seed):
            prompts = nn.Parameter(self.init.clone())
            clf = nn.Linear(self.init.shape[1], len(classes))
            opt = torch.optim.AdamW([prompts, *clf.parameters()], lr=self.lr)
            gen = torch.Generator().manual_seed(self.seed)
            for _ in progress_bar(range(self.epochs), desc=f"tupate approx: task {task.id}", disable=not progress):
                order = torch.randperm(len(texts), generator=gen)
                for s in range(0, len(texts), self.batch_size):
                    j = order[s:s + self.batch_size]
                    out = self._prompt_pass(prompts, [(k[j], v[j]) for k, v in kv], mask[j])
                    loss = nn.functional.cross_entropy(clf(out.mean(dim=1)), y[j])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        return (prompts.detach() - self.init).numpy().astype(np.float32)


class FullPromptTuner:
    """Full prompt tuning as the paper publishes it (``mode="published"``, see the module docstring): ``P`` soft
    prompts prepended at the input embeddings of a frozen encoder, two-way attention through every layer,
    gradients to the prompts through the whole encoder; a linear classifier on the ``[CLS]`` output."""

    mode = "published"
    #: bumped when the procedure changes (part of the cache key)
    VERSION = 1

    def __init__(self, encoder: str = PUBLISHED_ENCODER, n_prompts: int = 20, epochs: int = 20, lr: float = 1e-3,
                 batch_size: int = 16, max_texts: int = 0, max_length: int = 128, seed: int = 0,
                 device: str = "auto") -> None:
        import torch  # lazy: torch

        from ..features.text import pick_device  # lazy: start-up

        self.source = str(encoder)
        self.device = pick_device(device)
        self.tok, self.model = self._load(self.source)
        self.model.eval().to(self.device)  # eval: the frozen encoder's dropout is off
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.n_prompts, self.epochs, self.lr = int(n_prompts), int(epochs), float(lr)
        self.batch_size, self.max_texts, self.seed = int(batch_size), int(max_texts), int(seed)
        cfg = self.model.config
        # the prompts take P positions: the text keeps what is left of the position table (2 spare for
        # RoBERTa-style position offsets)
        room = int(getattr(cfg, "max_position_embeddings", 512)) - self.n_prompts - 2
        if room < 8:
            raise InputError(f"tupate: {self.n_prompts} prompts leave no room for text in the "
                             f"{cfg.max_position_embeddings} positions of encoder {self.source!r}", field="n_prompts")
        self.max_length = min(int(max_length), room)
        emb = self.model.get_input_embeddings().weight
        ids = np.random.default_rng(self.seed).choice(np.arange(min(1000, emb.shape[0] // 2), emb.shape[0]),
                                                      self.n_prompts, replace=False)
        self.init = emb[torch.from_numpy(ids).to(emb.device)].detach().clone()  # (P, H), the same for every task
        self.name = _encoder_tag(self.source)

    @staticmethod
    def _load(source: str):
        """Tokenizer and encoder through ``transformers``' own loading; a Hub id is read from the local cache
        when it is there (offline), and an uncached id without a reachable Hub is one error naming it."""
        from ..features.text import hub_offline_reason, in_hub_cache, is_hub_source  # lazy: start-up

        local_only = False
        if is_hub_source(source):
            local_only = in_hub_cache(source)
            if not local_only:
                reason = hub_offline_reason()
                if reason is not None:
                    raise InputError(f"tupate mode 'published' needs encoder {source!r}, which is not in the "
                                     f"Hugging Face cache, and the Hub is unreachable ({reason}); fetch it once "
                                     f"(`hf download {source}`) or give encoder_path=FOLDER", field="encoder_path")
        tok, model = _load_encoder(source, local_only)
        if getattr(model.config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
            model = model.get_encoder()
        return tok, model

    def describe(self) -> str:
        texts = "all" if self.max_texts <= 0 else str(self.max_texts)
        return (f"tupate mode 'published': {self.n_prompts} prompts tuned at the input of {self.source} "
                f"(frozen, every layer), {texts} training texts, {self.epochs} epochs, on {self.device}")

    def key(self, task: Task) -> str:
        return text_hash(task, "tupate-published", self.VERSION, self.name, self.n_prompts, self.epochs, self.lr,
                         self.batch_size, self.max_texts, self.max_length, self.seed)

    def tokenize(self, texts: list[str]):
        """Token ids of ``texts`` (cut at ``max_length``), padded to the longest, on the tuner's device."""
        enc = self.tok(list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}

    def forward(self, prompts, input_ids, attention_mask):
        """Last hidden states ``(B, P + T, H)`` of ``[prompts; tokens]``: the prompts are prepended to the token
        embeddings at the input; every position attends to every unpadded one in every layer."""
        import torch  # lazy: torch

        b = input_ids.shape[0]
        tokens = self.model.get_input_embeddings()(input_ids)
        x = torch.cat([prompts[None].expand(b, -1, -1).to(tokens.dtype), tokens], dim=1)
        mask = torch.cat([attention_mask.new_ones(b, self.n_prompts), attention_mask], dim=1)
        return self.model(inputs_embeds=x, attention_mask=mask).last_hidden_state

    def tune(self, task: Task, progress: bool = False) -> np.ndarray:
        """The ``P x H`` task matrix: the prompts tuned on the task's training texts."""
        import torch  # lazy: torch
        from torch import nn  # lazy: torch


        labels = task.train.labels
        idx = sample_indices(labels, self.max_texts, self.seed) if self.max_texts > 0 else np.arange(len(labels))
        texts = [task.train.texts[i] for i in idx]
        classes = {c: i for i, c in enumerate(dict.fromkeys(labels))}
        y = torch.tensor([classes[labels[i]] for i in idx], device=self.device)
        with _seeded_on(self.seed, self.device):
            prompts = nn.Parameter(self.init.clone())
            # the [CLS] output has the encoder's hidden size; the prompts live in its input embedding space, which
            # can be narrower (ALBERT's embedding_size)
            clf = nn.Linear(_hidden_size(self.model), len(classes)).to(self.device)
            opt = torch.optim.AdamW([prompts, *clf.parameters()], lr=self.lr)
            gen = torch.Generator().manual_seed(self.seed)
            for _ in progress_bar(range(self.epochs), desc=f"tupate published: task {task.id}", disable=not progress):
                order = torch.randperm(len(texts), generator=gen).tolist()
                for s in range(0, len(texts), self.batch_size):
                    j = order[s:s + self.batch_size]
                    enc = self.tokenize([texts[i] for i in j])
                    h = self.forward(prompts, enc["input_ids"], enc["attention_mask"])
                    loss = nn.functional.cross_entropy(clf(h[:, self.n_prompts]), y[j])  # [CLS] follows the prompts
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        return prompts.detach().float().cpu().numpy().astype(np.float32)


def _build(n_models: int, n_prompts: int, in_dim: int, width: int, heads: int, layers: int, dropout: float):
    """The ranker network; with ``width == in_dim`` it reads the task matrix rows as they are (no projection)."""
    import torch  # lazy: torch
    from torch import nn  # lazy: torch

    project = width != in_dim

    class TuPaTENet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.models = nn.Embedding(n_models, width)
            self.proj = nn.Sequential(nn.LayerNorm(in_dim), nn.Linear(in_dim, width)) if project else nn.Identity()
            self.pos = nn.Parameter(torch.randn(1 + n_prompts, width) * 0.02)
            layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width, dropout=dropout,
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.mlp = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1))

        def forward(self, mats, model_idx):
            # mats (B, P, H), model_idx (M,) -> predicted F1 (B, M)
            b, m = mats.shape[0], len(model_idx)
            t = self.proj(mats)[:, None].expand(b, m, -1, -1)
            mt = self.models(model_idx)[None, :, None, :].expand(b, m, 1, -1)
            seq = (torch.cat([mt, t], dim=2) + self.pos).reshape(b * m, 1 + mats.shape[1], -1)
            return self.mlp(self.encoder(seq)[:, 0]).reshape(b, m)

    return TuPaTENet()


@register("ranker")
class TuPaTERanker(NetState, LearnedRanker):
    name = "tupate"
    # pt_max_texts / pt_layers / width: None = the mode's default, 0 = every text / at the input / the encoder's
    # hidden size (see MODE_DEFAULTS)
    _parameter_constraints: ClassVar[Constraints] = {
        "mode": [Options(*MODES)],
        "device": [Options("auto", "cpu", "cuda")],
        "pt_max_texts": [Interval(Integral, 0, None, closed="left"), None],
        "pt_layers": [Interval(Integral, 0, None, closed="left"), None],
        "width": [Interval(Integral, 0, None, closed="left"), None],
    }
    # fitted (or loaded) state; the prompt tuner is built on first use
    mode_: str
    width_: int | None
    _tuner_obj: FullPromptTuner | PromptTuner | None

    def __init__(self, mode: str = "auto", device: str = "auto", n_prompts: int = 20, pt_epochs: int | None = None,
                 pt_lr: float = 1e-3, pt_batch_size: int = 16, pt_max_texts: int | None = None,
                 pt_max_length: int | None = None, pt_layers: int | None = None, width: int | None = None,
                 heads: int = 4, layers: int = 2, dropout: float = 0.1, epochs: int = 300, lr: float = 1e-3,
                 weight_decay: float = 1e-2, encoder_path: str | None = None, cache_dir: str | None = "auto",
                 seed: int = 0) -> None:
        super().__init__("none", 1, cache_dir, seed)
        self.mode, self.device = mode, device
        self.n_prompts, self.pt_epochs, self.pt_lr, self.pt_batch_size = n_prompts, pt_epochs, pt_lr, pt_batch_size
        self.pt_max_texts, self.pt_max_length, self.pt_layers = pt_max_texts, pt_max_length, pt_layers
        self.width, self.heads, self.layers, self.dropout = width, heads, layers, dropout
        self.epochs, self.lr, self.weight_decay = epochs, lr, weight_decay
        self.encoder_path = encoder_path

    def get_params(self) -> dict[str, Any]:
        return {k: v for k, v in super().get_params().items() if k not in ("encoder", "max_texts")}

    # -------------------------------------------------------------------------------- mode
    @property
    def resolved_mode(self) -> str:
        """``published`` or ``approx``: what a fitted or loaded ranker was built with, else what ``mode`` picks
        on ``device``."""
        if getattr(self, "mode_", None) is None:
            self.mode_ = resolve_mode(self.mode, self.device)
        return self.mode_

    def _setting(self, key: str) -> int:
        value = getattr(self, key)
        return int(MODE_DEFAULTS[self.resolved_mode][key] if value is None else value)

    def _torch_device(self):
        from ..features.text import pick_device  # lazy: start-up

        return pick_device(self.device)

    def _tuner(self) -> FullPromptTuner | PromptTuner:
        tuner: FullPromptTuner | PromptTuner | None = getattr(self, "_tuner_obj", None)
        if tuner is None:
            if self.resolved_mode == "published":
                if self.pt_layers not in (None, 0):
                    raise InputError(f"tupate: pt_layers={self.pt_layers} applies to mode 'approx' only: published "
                                     f"prompts enter at the input of every layer", field="pt_layers")
                encoder = self.encoder_path or getattr(self, "_pool_encoder", None) or PUBLISHED_ENCODER
                if encoder != (self.encoder_path or PUBLISHED_ENCODER):
                    log.info("tupate: its encoder %s from the pool's snapshot %s", PUBLISHED_ENCODER, encoder)
                tuner = FullPromptTuner(encoder, self.n_prompts,
                                        self._setting("pt_epochs"), self.pt_lr, self.pt_batch_size,
                                        self._setting("pt_max_texts"), self._setting("pt_max_length"), self.seed,
                                        self.device)
                if tuner.device.type == "cpu":
                    log.warning("tupate mode 'published' on a CPU: full prompt tuning back-propagates through the "
                                "whole encoder for every text (minutes to hours per task; benchmarks/tupate_cost.py)")
                log.info("%s", tuner.describe())
            else:
                texts = self._setting("pt_max_texts")
                encoder = self.encoder_path or default_encoder_path()
                try:
                    tuner = PromptTuner(encoder, self.n_prompts, self._setting("pt_epochs"), self.pt_lr,
                                        self.pt_batch_size, texts if texts > 0 else 1 << 30,
                                        self._setting("pt_max_length"), self._setting("pt_layers"), self.seed)
                    log.warning("%s", tuner.describe())
                except NotBertStyle as exc:  # ALBERT, DistilBERT, DeBERTa: prompts at the input, approx's budget
                    tuner = FullPromptTuner(encoder, self.n_prompts, self._setting("pt_epochs"), self.pt_lr,
                                            self.pt_batch_size, texts, self._setting("pt_max_length"), self.seed,
                                            "cpu")
                    log.warning("tupate runs its CPU approximation with prompts at the input of %s (%s): %d texts, "
                                "%d epochs, not the paper's full budget", Path(encoder).name,
                                str(exc).split("; got ")[-1], texts, self._setting("pt_epochs"))
            self._tuner_obj = tuner
        return tuner

    def describe(self) -> str:
        """One line: the mode this ranker builds its task matrices with and what that mode does."""
        return self._tuner().describe()

    # -------------------------------------------------------------------------------- task matrices
    def cache_path(self, task: Task) -> Path | None:
        """Where ``task``'s matrix is cached (None without a cache): keyed by mode, encoder and hyper-parameters."""
        tuner = self._tuner()
        folder = resolve_cache_dir(self.cache_dir)
        if folder is None:
            return None
        # approx keeps the file names it had before the modes existed (its caches stay valid)
        return folder / (f"tupate-{tuner.key(task)}.npz" if tuner.mode == "approx"
                         else f"tupate-{tuner.mode}-{tuner.key(task)}.npz")

    def task_matrix(self, task: Task, progress: bool = False) -> np.ndarray:
        """The cached ``P x H`` task matrix of ``task``."""
        _check_task(task)
        path = self.cache_path(task)
        cached = read_arrays(path)
        if cached is not None and "matrix" in cached:
            return cached["matrix"]
        mat = self._tuner().tune(task, progress=progress)
        write_arrays(path, {"matrix": mat})
        return mat

    # the base class' text representation is replaced by the task matrix
    def _rep(self, task: Task):
        task.require_data("method 'tupate'")
        return self.task_matrix(task)

    def _reps(self, tasks, progress: bool = False):
        return [self.task_matrix(t, progress) for t in progress_bar(list(tasks), desc="tupate: task matrices",
                                                                    disable=not progress)]

    # -------------------------------------------------------------------------------- the ranker network
    def _width(self, in_dim: int) -> int:
        width_ = getattr(self, "width_", None)
        if width_ is not None:  # a loaded artifact's
            return int(width_)
        w = self._setting("width")
        return in_dim if w == 0 else w

    def _net(self, in_dim: int):
        width = self._width(in_dim)
        if width % int(self.heads):
            raise InputError(f"tupate: width {width} is not a multiple of heads={self.heads}", field="heads")
        return _build(len(self.model_ids_), int(self.n_prompts), in_dim, width, int(self.heads),
                      int(self.layers), float(self.dropout))

    def _use_pool(self, pool: Pool | None) -> None:
        """Where the pool holds the published encoder's snapshot (the organisers' ``data/models/04``), mode
        ``published`` reads its default encoder there instead of the Hugging Face cache."""
        found = pool_encoder(pool) if self.encoder_path is None else None
        if found != getattr(self, "_pool_encoder", None):
            self._pool_encoder = found
            tuner = getattr(self, "_tuner_obj", None)
            if isinstance(tuner, FullPromptTuner) and self.resolved_mode == "published":
                self._tuner_obj = None

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        self._use_pool(pool)
        return super().rank(task, pool)

    def _learn(self, tasks: TaskSet | None, truth: GroundTruth, *, pool: Pool | None, progress: bool) -> None:
        """As :meth:`LearnedRanker._learn`; mode ``published`` trains on macro-F1 (the ground truth's ``f1``)."""
        self._use_pool(pool)
        mode = resolve_mode(self.mode, self.device)  # a refit follows the parameters, not a loaded artifact
        if getattr(self, "mode_", None) != mode:
            self._tuner_obj = None
        self.mode_, self.width_ = mode, None
        self._truth_for_fit = truth
        try:
            super()._learn(tasks, truth, pool=pool, progress=progress)
        finally:
            del self._truth_for_fit

    def _fit(self, tasks, reps, y, progress) -> None:
        import torch  # lazy: torch


        published = self.resolved_mode == "published"
        if published:  # the paper's target: the candidates' macro-F1 (the base class hands normalized F1)
            f1 = self._truth_for_fit.matrix("f1")
            y = f1.loc[[t.id for t in tasks], list(self.model_ids_)].to_numpy(float)
        dev = self._torch_device() if published else torch.device("cpu")  # approx: CPU, as it always was
        x = torch.from_numpy(np.stack(reps).astype(np.float32)).to(dev)
        yt = torch.from_numpy(y.astype(np.float32)).to(dev)
        with _seeded_on(self.seed, dev):
            net = self._net(x.shape[2])
            with torch.no_grad():
                net.mlp[-1].bias.fill_(float(y.mean()))
            net.to(dev)
            opt = torch.optim.AdamW(net.parameters(), lr=float(self.lr), weight_decay=float(self.weight_decay))
            models = torch.arange(len(self.model_ids_), device=dev)
            net.train()
            for _ in progress_bar(range(int(self.epochs)), desc="tupate: epochs", disable=not progress):
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(net(x, models), yt)
                loss.backward()
                opt.step()
        net.eval()
        self.net_, self.in_dim_ = net, int(x.shape[2])

    def _scores(self, task: Task, rep, pool: Pool, idx: np.ndarray) -> np.ndarray:
        import torch  # lazy: torch

        dev = next(self.net_.parameters()).device
        with torch.no_grad():
            x = torch.from_numpy(rep[None].astype(np.float32)).to(dev)
            return self.net_(x, torch.from_numpy(idx).to(dev))[0].float().cpu().numpy()

    # -------------------------------------------------------------------------------- artifacts
    def _state(self):
        arrays, extra = super()._state()
        return arrays, {**extra, "mode": self.resolved_mode, "width": self._width(self.in_dim_)}

    def _set_state(self, arrays, extra) -> None:
        # the mode the artifact was fitted in (before the modes existed, every tupate artifact was approx)
        self.mode_ = str(extra.get("mode", "approx"))
        if self.mode_ not in ("published", "approx"):
            raise InputError(f"tupate artifact: unknown mode {self.mode_!r}", field="extra.mode")
        self.width_ = extra.get("width")  # before the modes existed: the stored width parameter
        super()._set_state(arrays, extra)


