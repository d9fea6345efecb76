"""Write the inputs the documentation's commands name into a folder, to follow README and the guides without
data of your own::

    python docs/make_inputs.py try-docs && cd try-docs
    modelseek rank my_data.csv -o run.txt

It writes ``my_data.csv`` (a text,label task), ``examples/`` (the repository's example tasks), the organisers'
Subtask A repository after their downloader (``modelretrieval-1-subtask-a``: six test tasks, candidate 5's
snapshot) and their Subtask B repository as cloned (``modelretrieval-1-subtask-b/data``), ``my-pool.yaml`` (two tiny BERTs saved
with ``save_pretrained`` in ``models/``) and a Re-Align registry with its stimuli catalog and images
(``registry.json``, ``catalog.jsonl``, ``val/``). Everything is generated and seeded; nothing is downloaded.
``tests/test_docs.py`` runs every runnable block of the documentation in such a folder.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_inputs(folder: Path) -> Path:
    """Write the documented inputs into ``folder`` (created; an existing input is an error, never overwritten)."""
    from modelseek.align.testing import custom_entry, make_images
    from modelseek.style.synthetic import write_organiser_layout, write_organiser_sources
    from modelseek.testing import write_task_table
    from modelseek.testing.domain_text import make_domain_task
    from modelseek.testing.finetune import make_learnable_bert
    from modelseek.testing.organisers import make_organisers_layout

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    taken = [n for n in ("my_data.csv", "examples", "my-pool.yaml", "registry.json") if (folder / n).exists()]
    if taken:
        raise SystemExit(f"error: {folder}: already holds {', '.join(taken)}; choose an empty folder")
    shutil.copytree(ROOT / "examples", folder / "examples", ignore=shutil.ignore_patterns("*.py"))
    task = make_domain_task("social", n_train=120, n_val=20, n_test=20, seed=7, task_id="my_data")
    write_task_table(task, folder / "my_data.csv")
    listing, train, models = write_organiser_sources(folder / "b-sources", n_models=4, train_contents=(1, 2, 3, 4),
                                                     test_contents=(7, 9))
    write_organiser_layout(folder / "modelretrieval-1-subtask-b", listing, train, models, size=32, render=32, grain=0)
    # the Subtask A repository after the organisers' downloader: padded test-task folders, candidate 5's snapshot
    make_organisers_layout(folder / "modelretrieval-1-subtask-a", n_test=6, n_train_tasks=4, snapshots=(5,))
    for seed in (0, 1):
        make_learnable_bert(folder / "models" / f"tiny-bert-{seed}", seed=seed)
    (folder / "my-pool.yaml").write_text("name: my-pool\ncandidates:\n" + "".join(
        f"  - id: tiny-bert-{s}\n    path: models/tiny-bert-{s}\n" for s in (0, 1)))
    images = make_images(folder / "val", 16, seed=1)
    (folder / "registry.json").write_text(json.dumps([custom_entry(f"cnn{s}", seed=s) for s in range(3)]))
    (folder / "catalog.jsonl").write_text("".join(
        json.dumps({"dataset_name": "imagenet_val", "image_identifier": p.name}) + "\n" for p in images))
    return folder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python docs/make_inputs.py FOLDER")
    print(f"wrote the documentation's inputs to {make_inputs(Path(sys.argv[1]))}")
