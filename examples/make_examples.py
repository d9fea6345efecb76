"""Generate the example data sets under examples/ (offline, deterministic).

    python examples/make_examples.py          # rewrites examples/*.csv
    modelseek rank examples/reviews-4class.csv

Each file is a synthetic keyword-driven text-classification task (modelseek.testing.make_text_task) written
as one CSV with columns text, label, split.
"""

from __future__ import annotations

from pathlib import Path

from modelseek.testing import make_text_task, write_task_table

EXAMPLES = [
    # (file name, task options)
    ("reviews-4class.csv", dict(n_classes=4, domain="reviews", n_train=240, n_val=40, n_test=40, seed=0)),
    ("finance-3class.csv", dict(n_classes=3, domain="finance", n_train=180, n_val=30, n_test=30, seed=1)),
]


def main(out: Path | None = None) -> list[Path]:
    out = out or Path(__file__).resolve().parent
    written = []
    for name, kw in EXAMPLES:
        task = make_text_task(Path(name).stem, **kw)
        written.append(write_task_table(task, out / name))
        print(f"wrote {out / name} ({len(task.train)} train / {len(task.val)} val / {len(task.test)} test, "
              f"{task.num_classes} classes)")
    return written


if __name__ == "__main__":
    main()
