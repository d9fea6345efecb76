"""Test helpers of the style (Subtask B) part: a miniature Subtask B layout with generated images (offline,
seeded). Used by tests/style and the fuzz suite."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def make_b_layout(root: Path, n_models: int = 4, n_train_content: int = 4, n_test_content: int = 2,
                  size: int = 32, seed: int = 0) -> Path:
    """The Subtask B layout in miniature: models.csv (ids 1..n), train.csv, test-image-ids.txt with names
    like ``test-0001-0011.png``, images/train and images/test holding styled generated PNGs."""
    from PIL import Image  # lazy: PIL

    from ..style.generated import draw_content, make_styles  # lazy: pandas, scipy

    styles = make_styles(n_models, seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "images" / "train").mkdir(parents=True)
    (root / "images" / "test").mkdir(parents=True)
    with open(root / "models.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "model_name", "model_id", "model_version_id", "version_name", "civitai_url",
                    "trigger_words"])
        for i, (name, _) in enumerate(styles, start=1):
            w.writerow([i, f"style {name}", 1000 + i, 2000 + i, "v1", f"https://example.org/{i}", name])

    def render(content: int, style: int) -> np.ndarray:
        x = draw_content(size, np.random.default_rng([seed, 3, content])).astype(float) / 255
        y = styles[style][1](x, np.random.default_rng([seed, 4, content, style]))
        return np.round(np.clip(y, 0, 1) * 255).astype(np.uint8)

    rows = []
    for c in range(1, n_train_content + 1):
        for m in range(1, n_models + 1):
            name = f"train-{c:04d}-{m:04d}.png"
            Image.fromarray(render(c, m - 1)).save(root / "images" / "train" / name)
            rows.append([name, "train", m, c, 0])
    with open(root / "train.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["image_id", "split", "model_id", "content_image_id", "best_seed"])
        w.writerows(rows)
    names = []
    k = 0
    for c in range(n_train_content + 1, n_train_content + n_test_content + 1):
        for m in range(1, n_models + 1):
            k += 11
            name = f"test-{c:04d}-{k:04d}.png"
            Image.fromarray(render(c, m - 1)).save(root / "images" / "test" / name)
            names.append(name)
    (root / "test-image-ids.txt").write_text("".join(n + "\n" for n in names))
    (root / "content-images.csv").write_text(
        "image_id,image_url\n" + "".join(f"{c},https://example.org/c{c}\n"
                                         for c in range(1, n_train_content + n_test_content + 1)))
    return root
