"""``spider`` — the Model Spider design (Zhang et al., "Model Spider: Learning to Rank Pre-Trained Models
Efficiently", NeurIPS 2023), for text tasks.

Each candidate has one learnable vector (its "model token"). A task is the set of its class prototypes (mean
text embedding per class, the "task tokens"; at most ``max_classes``, the largest classes kept), projected to
the model width. For candidate ``m`` the sequence ``[model token m; prototype 1..C]`` (padded and masked)
passes through one (pre-norm) Transformer block; a linear head on the first position's output is the score.
Training is listwise (ListNet top-one cross-entropy against softmax(normalized F1 / ``target_temperature``)),
full batch, AdamW, so tied best models share the target mass.
"""

from __future__ import annotations


import numpy as np

from ..data.pool import Pool
from ..data.task import Task
from ...core.progress import progress_bar
from ..taskrep import TaskRep
from ._learned import LearnedRanker
from ...core.kinds import register
from ._torch import NetState, listnet_loss, seeded


def _build(n_models: int, in_dim: int, width: int, heads: int, dropout: float):
    import torch  # lazy: torch
    from torch import nn  # lazy: torch

    class SpiderNet(nn.Module):
        """One pre-norm Transformer block applied to ``[model token m; prototypes]``, read at position 0.

        Only position 0's output is used and there is a single block, so the prototypes' own outputs never
        matter: position 0 is computed directly (query = model token m; keys/values = model token m and the
        task's prototypes), for all candidates at once. This is exactly the block's position-0 output, at
        ``M`` times less cost than running ``M`` separate sequences.
        """

        def __init__(self) -> None:
            super().__init__()
            self.model_tokens = nn.Parameter(torch.randn(n_models, width) * 0.1)
            self.proj = nn.Sequential(nn.LayerNorm(in_dim), nn.Linear(in_dim, width))
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.attn = nn.MultiheadAttention(width, heads, dropout=dropout, batch_first=True)
            self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Dropout(dropout),
                                    nn.Linear(2 * width, width))
            self.drop = nn.Dropout(dropout)
            self.head = nn.Linear(width, 1)

        def forward(self, protos, mask, model_idx):
            # protos (B, C, in_dim); mask (B, C) True = padding; model_idx (M,) -> scores (B, M)
            b, m = protos.shape[0], len(model_idx)
            x0 = self.model_tokens[model_idx][None].expand(b, -1, -1)            # (B, M, W)
            kv = self.norm1(torch.cat([x0, self.proj(protos)], dim=1))            # (B, M+C, W)
            # query m sees its own model token and the (unpadded) prototypes
            own = torch.full((m, m), float("-inf")).fill_diagonal_(0.0)
            att_mask = torch.cat([own, torch.zeros(m, protos.shape[1])], dim=1)   # (M, M+C)
            pad = torch.cat([torch.zeros(b, m, dtype=torch.bool), mask], dim=1)   # (B, M+C)
            full = att_mask[None].expand(b, -1, -1).masked_fill(pad[:, None, :], float("-inf"))
            full = full.repeat_interleave(self.attn.num_heads, dim=0)
            h = x0 + self.drop(self.attn(kv[:, :m], kv, kv, attn_mask=full, need_weights=False)[0])
            h = h + self.drop(self.ff(self.norm2(h)))
            return self.head(h).squeeze(-1)

    return SpiderNet()


def prototype_batch(reps: list[TaskRep], max_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Padded (B, C, d) prototypes and (B, C) padding mask; tasks with more classes keep the largest ones."""
    c = min(max_classes, max(r.num_classes for r in reps))
    d = reps[0].prototypes.shape[1]
    x = np.zeros((len(reps), c, d), np.float32)
    mask = np.ones((len(reps), c), bool)
    for i, r in enumerate(reps):
        keep = np.argsort(-r.class_counts, kind="stable")[:c]
        x[i, : len(keep)] = r.prototypes[np.sort(keep)]
        mask[i, : len(keep)] = False
    return x, mask


@register("ranker")
class SpiderRanker(NetState, LearnedRanker):
    name = "spider"

    def __init__(self, width: int = 64, heads: int = 4, dropout: float = 0.1, epochs: int = 300,
                 lr: float = 1e-3, weight_decay: float = 1e-2, target_temperature: float = 0.02,
                 max_classes: int = 32, encoder: str = "minilm", max_texts: int = 256,
                 cache_dir: str | None = "auto", seed: int = 0) -> None:
        super().__init__(encoder, max_texts, cache_dir, seed)
        self.width = width
        self.heads = heads
        self.dropout = dropout
        self.epochs = epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.target_temperature = target_temperature
        self.max_classes = max_classes

    def _net(self, in_dim: int):
        return _build(len(self.model_ids_), in_dim, int(self.width), int(self.heads), float(self.dropout))

    def _fit(self, tasks, reps, y, progress) -> None:
        import torch  # lazy: torch


        x, mask = prototype_batch(reps, int(self.max_classes))
        with seeded(self.seed):
            net = self._net(x.shape[2])
            opt = torch.optim.AdamW(net.parameters(), lr=float(self.lr), weight_decay=float(self.weight_decay))
            xt, mt, yt = torch.from_numpy(x), torch.from_numpy(mask), torch.from_numpy(y.astype(np.float32))
            models = torch.arange(len(self.model_ids_))
            net.train()
            for _ in progress_bar(range(int(self.epochs)), desc="spider: epochs", disable=not progress):
                opt.zero_grad()
                loss = listnet_loss(net(xt, mt, models), yt, float(self.target_temperature))
                loss.backward()
                opt.step()
        net.eval()
        self.net_ = net
        self.in_dim_ = int(x.shape[2])

    def _scores(self, task: Task, rep: TaskRep, pool: Pool, idx: np.ndarray) -> np.ndarray:
        import torch  # lazy: torch

        x, mask = prototype_batch([rep], int(self.max_classes))
        with torch.no_grad():
            return self.net_(torch.from_numpy(x), torch.from_numpy(mask), torch.from_numpy(idx))[0].numpy()
