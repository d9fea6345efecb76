"""``tupate`` — task embeddings by prompt tuning, then a Transformer that reads [model; task matrix] and
predicts F1 (the NTCIR-19 Model Retrieval paper's proposed method, "TuPaTE").

**Task matrix.** ``P`` (= 20) soft prompt vectors are tuned on the task with the text encoder frozen (only the
prompts and a linear classifier learn; AdamW, lr 1e-3). The tuned prompts minus their (shared, seeded)
initial values form the ``P x H`` task matrix. Matrices are cached on disk per task.

*CPU-cost deviations (stated, deliberate):* full prompt tuning back-propagates through the whole encoder for
every text, which costs minutes per task on a 2-core CPU. Here the prompts are **read-only**: in each layer
they pass through, the prompt tokens attend to themselves and to the text tokens, but the text tokens do not
attend to the prompts. The text's hidden states and keys/values are therefore computed once per task (one
forward pass) and only the ``P`` prompt positions run through the frozen layers per step. The prompts enter
before the last ``pt_layers`` (default 2) layers of the encoder, and tuning uses ``pt_max_texts`` (default
32, class-stratified) texts of at most ``pt_max_length`` (48) tokens for ``pt_epochs`` (10, the paper: 20)
epochs. The classifier reads the mean of the prompts' last-layer states. This works with BERT-style encoders
(``BertModel`` layout: all-MiniLM-L6-v2, BERT, ...).

**Ranker.** A learned embedding per candidate and the task matrix rows (projected to ``width``) form the
sequence ``[model; t_1..t_P]``, with learned positional embeddings; a 2-layer Transformer encoder reads it
and an MLP on the model position predicts the candidate's normalized F1, trained with MSE (full batch, AdamW).
"""

from __future__ import annotations

import hashlib
from numbers import Integral
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..data.pool import Pool
from ..data.task import Task
from ..config import Interval
from ..errors import InputError
from ..taskrep import read_arrays, resolve_cache_dir, sample_indices, text_hash, write_arrays
from ._learned import LearnedRanker
from ._registry import register
from ._torch import NetState
from .base import Constraints


def default_encoder_path() -> str:
    from ..features.text import offline_minilm_path

    return str(offline_minilm_path())


class PromptTuner:
    """Read-only prompt tuning on a frozen BERT-style encoder (see module docstring)."""

    def __init__(self, encoder_path: str, n_prompts: int = 20, epochs: int = 10, lr: float = 1e-3,
                 batch_size: int = 16, max_texts: int = 32, max_length: int = 48, layers: int = 2,
                 seed: int = 0) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.path = str(encoder_path)
        self.tok = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModel.from_pretrained(self.path).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        if not hasattr(self.model, "encoder") or not hasattr(self.model.encoder, "layer"):
            raise InputError(f"tupate needs a BERT-style encoder (encoder.layer[...]); got "
                             f"{type(self.model).__name__}", path=self.path)
        self.n_prompts, self.epochs, self.lr = int(n_prompts), int(epochs), float(lr)
        self.batch_size, self.max_texts, self.max_length, self.seed = int(batch_size), int(max_texts), int(max_length), int(seed)
        n_layers = len(self.model.encoder.layer)
        self.layers = n_layers if int(layers) <= 0 else min(int(layers), n_layers)
        self.first = n_layers - self.layers  # prompts enter before this layer
        emb = self.model.embeddings.word_embeddings.weight
        ids = np.random.default_rng(self.seed).choice(np.arange(1000, emb.shape[0]), self.n_prompts, replace=False)
        self.init = emb[torch.from_numpy(ids)].detach().clone()  # (P, H), the same for every task
        cfg = Path(self.path) / "config.json"
        tag = hashlib.sha256(cfg.read_bytes()).hexdigest()[:12] if cfg.exists() else Path(self.path).name
        self.name = f"{Path(self.path).name}/{tag}"

    def key(self, task: Task) -> str:
        return text_hash(task, "tupate-prompts", self.name, self.n_prompts, self.epochs, self.lr, self.batch_size,
                         self.max_texts, self.max_length, self.layers, self.seed)

    def _text_states(self, texts: list[str]):
        """Per layer: (keys, values) of the text tokens, split by head; plus the padding mask."""
        import torch

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
        import torch

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

    def tune(self, task: Task) -> np.ndarray:
        """The ``P x H`` task matrix (tuned prompts minus their initial values)."""
        import torch
        from torch import nn

        from ._torch import seeded

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
            for _ in range(self.epochs):
                order = torch.randperm(len(texts), generator=gen)
                for s in range(0, len(texts), self.batch_size):
                    j = order[s:s + self.batch_size]
                    out = self._prompt_pass(prompts, [(k[j], v[j]) for k, v in kv], mask[j])
                    loss = nn.functional.cross_entropy(clf(out.mean(dim=1)), y[j])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        return (prompts.detach() - self.init).numpy().astype(np.float32)


def _build(n_models: int, n_prompts: int, in_dim: int, width: int, heads: int, layers: int, dropout: float):
    import torch
    from torch import nn

    class TuPaTENet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.models = nn.Embedding(n_models, width)
            self.proj = nn.Sequential(nn.LayerNorm(in_dim), nn.Linear(in_dim, width))
            self.pos = nn.Parameter(torch.randn(1 + n_prompts, width) * 0.02)
            layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width, dropout=dropout,
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.mlp = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1))

        def forward(self, mats, model_idx):
            # mats (B, P, H), model_idx (M,) -> predicted normalized F1 (B, M)
            b, m = mats.shape[0], len(model_idx)
            t = self.proj(mats)[:, None].expand(b, m, -1, -1)
            mt = self.models(model_idx)[None, :, None, :].expand(b, m, 1, -1)
            seq = (torch.cat([mt, t], dim=2) + self.pos).reshape(b * m, 1 + mats.shape[1], -1)
            return self.mlp(self.encoder(seq)[:, 0]).reshape(b, m)

    return TuPaTENet()


@register
class TuPaTERanker(NetState, LearnedRanker):
    name = "tupate"
    _parameter_constraints: ClassVar[Constraints] = {"pt_max_texts": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, n_prompts: int = 20, pt_epochs: int = 10, pt_lr: float = 1e-3, pt_batch_size: int = 16,
                 pt_max_texts: int = 32, pt_max_length: int = 48, pt_layers: int = 2, width: int = 64, heads: int = 4, layers: int = 2,
                 dropout: float = 0.1, epochs: int = 300, lr: float = 1e-3, weight_decay: float = 1e-2,
                 encoder_path: str | None = None, cache_dir: str | None = "auto", seed: int = 0) -> None:
        super().__init__("none", pt_max_texts, cache_dir, seed)
        self.n_prompts, self.pt_epochs, self.pt_lr, self.pt_batch_size = n_prompts, pt_epochs, pt_lr, pt_batch_size
        self.pt_max_texts, self.pt_max_length, self.pt_layers = pt_max_texts, pt_max_length, pt_layers
        self.width, self.heads, self.layers, self.dropout = width, heads, layers, dropout
        self.epochs, self.lr, self.weight_decay = epochs, lr, weight_decay
        self.encoder_path = encoder_path

    def get_params(self) -> dict[str, Any]:
        return {k: v for k, v in super().get_params().items() if k not in ("encoder", "max_texts")}

    def _tuner(self) -> PromptTuner:
        if getattr(self, "_tuner_obj", None) is None:
            self._tuner_obj = PromptTuner(self.encoder_path or default_encoder_path(), self.n_prompts, self.pt_epochs,
                                          self.pt_lr, self.pt_batch_size, self.pt_max_texts, self.pt_max_length,
                                          self.pt_layers, self.seed)
        return self._tuner_obj

    def task_matrix(self, task: Task) -> np.ndarray:
        """The cached ``P x H`` task matrix of ``task``."""
        from ..taskrep import _check_task

        _check_task(task)
        tuner = self._tuner()
        folder = resolve_cache_dir(self.cache_dir)
        path = folder / f"tupate-{tuner.key(task)}.npz" if folder is not None else None
        cached = read_arrays(path)
        if cached is not None and "matrix" in cached:
            return cached["matrix"]
        mat = tuner.tune(task)
        write_arrays(path, {"matrix": mat})
        return mat

    # the base class' text representation is replaced by the task matrix
    def _rep(self, task: Task):  # type: ignore[override]
        task.require_data("method 'tupate'")
        return self.task_matrix(task)

    def _net(self, in_dim: int):
        return _build(len(self.model_ids_), int(self.n_prompts), in_dim, int(self.width), int(self.heads),
                      int(self.layers), float(self.dropout))

    def _fit(self, tasks, reps, y, progress) -> None:
        import torch

        from ..progress import progress_bar
        from ._torch import seeded

        x = torch.from_numpy(np.stack(reps).astype(np.float32))
        yt = torch.from_numpy(y.astype(np.float32))
        with seeded(self.seed):
            net = self._net(x.shape[2])
            with torch.no_grad():
                net.mlp[-1].bias.fill_(float(y.mean()))
            opt = torch.optim.AdamW(net.parameters(), lr=float(self.lr), weight_decay=float(self.weight_decay))
            models = torch.arange(len(self.model_ids_))
            net.train()
            for _ in progress_bar(range(int(self.epochs)), desc="tupate: epochs", disable=not progress):
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(net(x, models), yt)
                loss.backward()
                opt.step()
        net.eval()
        self.net_, self.in_dim_ = net, int(x.shape[2])

    def _scores(self, task: Task, rep, pool: Pool, idx: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.net_(torch.from_numpy(rep[None].astype(np.float32)), torch.from_numpy(idx))[0].numpy()
