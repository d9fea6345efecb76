"""Generate the example data sets under examples/ (offline, deterministic).

    python examples/make_examples.py          # rewrites examples/*.csv
    modelseek rank examples/reviews-4class.csv

``reviews-4class.csv`` is a synthetic keyword-driven task (modelseek.testing.make_text_task); the three domain
examples (modelseek.testing.domain_text: templates and seeded slot values that read like the domain) are what
README shows the default answering, with the evidence it names:

    modelseek rank examples/clinical-notes.csv     # notes -> cardiology / pulmonology / neurology / GI
    modelseek rank examples/finance-news.csv       # market news -> positive / negative / neutral
    modelseek rank examples/social-posts.csv       # posts to brands -> complaint / praise / question

Every file is one CSV with columns text, label, split.
"""

from __future__ import annotations

from pathlib import Path

from modelseek.testing import make_text_task, write_task_table
from modelseek.testing.domain_text import make_domain_task

EXAMPLES = [
    # (file name, task options)
    ("reviews-4class.csv", dict(n_classes=4, domain="reviews", n_train=240, n_val=40, n_test=40, seed=0)),
]
DOMAIN_EXAMPLES = [
    ("clinical-notes.csv", "clinical", 0),
    ("finance-news.csv", "finance", 1),
    ("social-posts.csv", "social", 2),
]


def main(out: Path | None = None) -> list[Path]:
    out = out or Path(__file__).resolve().parent
    written = []
    tasks = [make_text_task(Path(name).stem, **kw) for name, kw in EXAMPLES]
    tasks += [make_domain_task(domain, n_train=240, n_val=40, n_test=40, seed=seed, task_id=Path(name).stem)
              for name, domain, seed in DOMAIN_EXAMPLES]
    for name, task in zip([n for n, _ in EXAMPLES] + [n for n, _, _ in DOMAIN_EXAMPLES], tasks):
        written.append(write_task_table(task, out / name))
        print(f"wrote {out / name} ({len(task.train)} train / {len(task.val)} val / {len(task.test)} test, "
              f"{task.num_classes} classes)")
    return written


if __name__ == "__main__":
    main()
