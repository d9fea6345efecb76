"""Test helpers shipped with the package: generated images, tiny model entries and registries (offline).

Used by the tests, the benchmarks and the demo; everything is seeded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

TINY_VIT = {"model_type": "vit", "image_size": 32, "patch_size": 8, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 2, "intermediate_size": 64}
TINY_RESNET = {"model_type": "resnet", "embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1],
               "layer_type": "basic"}


def make_images(root: Path, n: int, seed: int = 0, size=(40, 48)) -> list[Path]:
    """Smooth random colour images (gradients plus blobs) saved as PNG."""
    from PIL import Image  # lazy: PIL

    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    h, w = size
    yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
    paths = []
    for i in range(n):
        img = np.zeros((h, w, 3))
        for c in range(3):
            a, b, f = rng.normal(size=3)
            img[..., c] = 0.5 + 0.3 * np.sin(3 * f * xx + a) * np.cos(3 * b * yy)
        cy, cx = rng.uniform(0.2, 0.8, 2)
        img += 0.4 * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 0.02)[..., None] * rng.uniform(-1, 1, 3)
        arr = (np.clip(img, 0, 1) * 255).astype(np.uint8)
        p = root / f"img_{i:03d}.png"
        Image.fromarray(arr).save(p)
        paths.append(p)
    return paths


def custom_entry(name="cnn", layer="features.3", embedding="pool", seed=0, arch="tiny_cnn", **kw):
    return {"model_name": name, "source": "custom", "layer": layer, "embedding": embedding, "input_size": 32,
            "model_parameters": {"arch": arch, "seed": seed, **kw}}


def make_features(n: int, dims=(8, 16, 12, 10, 6), latent: int = 4, seed: int = 0) -> list[np.ndarray]:
    """Representations of n stimuli by len(dims) 'models': each a random nonlinear read-out of a shared latent
    plus model-specific noise, so models agree on some stimuli more than on others."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, latent))
    return [np.tanh(Z @ rng.normal(size=(latent, d)) * rng.uniform(0.5, 3))
            + rng.normal(size=(n, d)) * rng.uniform(0.1, 1) for d in dims]


def planted_blue_features(n: int, seed: int = 0, M: int = 100, k: int = 20):
    """Representations of ``M`` models on ``n`` stimuli in clusters sharing a latent factor; returns (features,
    planted indices, cluster labels). Planted: a cluster of exactly ``k`` models (the best k-subset), a decoy of
    near-duplicates that traps greedy, clusters too small for a k-subset and singletons (see
    benchmarks/align_blue.py)."""
    rng = np.random.default_rng(seed)
    sizes, noise = ([k, 6, 15, 12, 10, 8, 8], [0.9, 0.12, 1.3, 1.3, 1.2, 1.2, 1.2]) if M >= 80 else \
        ([k, 3, k - 1, 4], [0.9, 0.12, 1.3, 1.3])
    if sum(sizes) > M:
        raise ValueError(f"clusters of {sum(sizes)} models do not fit in M = {M}")
    noise += [1.0] * (M - sum(sizes))
    sizes += [1] * (M - sum(sizes))
    cluster: list[int] = []
    feats: list[np.ndarray] = []
    for c, (size, sd) in enumerate(zip(sizes, noise)):
        Z = rng.normal(size=(n, 8))
        for _ in range(size):
            d = int(rng.integers(24, 96))
            F = np.tanh(Z @ rng.normal(size=(8, d)) * rng.uniform(0.5, 1.5)) + rng.normal(size=(n, d)) * sd
            feats.append(F)
            cluster.append(c)
    order = rng.permutation(M)  # the planted cluster is not a block of the first indices
    feats = [feats[i] for i in order]
    labels = np.asarray(cluster)[order]
    return feats, sorted(np.flatnonzero(labels == 0).tolist()), labels


def planted_cka(M: int = 30, k: int = 8, seed: int = 0) -> tuple[np.ndarray, list[int]]:
    """An M x M CKA matrix whose best k-subset (by mean pairwise CKA) is planted, and that subset: the k models
    agree at 0.78-0.82, a decoy of 4 agrees higher (0.95-0.99) but is too small to be chosen, the rest 0.2-0.5."""
    rng = np.random.default_rng(seed)
    C = rng.uniform(0.2, 0.5, (M, M))
    perm = rng.permutation(M)
    best, decoy = perm[:k], perm[k:k + 4]
    C[np.ix_(best, best)] = rng.uniform(0.78, 0.82, (k, k))
    C[np.ix_(decoy, decoy)] = rng.uniform(0.95, 0.99, (4, 4))
    C = (C + C.T) / 2
    np.fill_diagonal(C, 1)
    return C, sorted(best.tolist())

