"""Small models for the ``custom`` source: real torch modules, random weights from an explicit seed.

They exist so that the whole alignment pipeline (hooks, strategies, caches, CKA, solvers) runs offline in
seconds, and as examples of the ``custom`` contract: ``model_parameters = {"arch": "<name>" or
"package.module:Factory", "seed": 0, ...constructor keyword arguments}``.
"""

from __future__ import annotations


def tiny_cnn(width: int = 8, depth: int = 2, num_classes: int = 10):
    """A VGG-like CNN: ``features.<i>`` conv blocks, ``avgpool``, ``fc``."""
    from torch import nn  # lazy: torch

    class TinyCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers, c_in = [], 3
            for i in range(depth):
                c_out = width * (2 ** i)
                layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
                c_in = c_out
            self.features = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(c_in, num_classes)

        def forward(self, x):
            x = self.avgpool(self.features(x))
            return self.fc(x.flatten(1))

    return TinyCNN()


def tiny_vit(dim: int = 16, depth: int = 2, heads: int = 2, patch: int = 8, image_size: int = 32):
    """A minimal ViT: ``patch_embed``, ``blocks.<i>`` (pre-norm transformer layers), ``norm``; a CLS token."""
    import torch  # lazy: torch
    from torch import nn  # lazy: torch

    class TinyViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
            n = (image_size // patch) ** 2
            self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
            self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, batch_first=True, norm_first=True)
                for _ in range(depth))
            self.norm = nn.LayerNorm(dim)

        def forward(self, x):
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
            for b in self.blocks:
                x = b(x)
            return self.norm(x)

    return TinyViT()


ZOO = {"tiny_cnn": tiny_cnn, "tiny_vit": tiny_vit}
