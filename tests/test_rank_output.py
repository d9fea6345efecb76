"""Issue #36 (item 5): what a person reads of ``rank`` is aligned and complete — columns sized to their content
(long, non-numeric docIDs), and the model's name whatever the method (a local pool without Hugging Face ids is
named by its folders), and a local model's architecture read from its config."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def pool_and_task(tmp_path_factory) -> tuple[Path, Path]:
    from modelseek.testing import make_text_task, write_task_table
    from modelseek.testing.tiny_models import make_tiny_bert

    root = tmp_path_factory.mktemp("local-pool")
    table = write_task_table(make_text_task("t", 3, 45, 15, 15, seed=2), root / "task.csv")
    pool = root / "pool.yaml"
    pool.write_text("candidates:\n" + "".join(
        f"  - {{id: {cid}, path: {make_tiny_bert(root / folder, seed=i)}}}\n"
        for i, (cid, folder) in enumerate((("a-rather-long-candidate-id", "encoder-one"), ("b", "encoder-two")))),
        encoding="utf-8")
    return table, pool


def _table(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("rank"))
    return [ln for ln in lines[start:start + 3]]


@pytest.mark.parametrize("method", [["logme"], ["logme", "knn", "--fusion", "rrf"]])
def test_columns_fit_long_docids_and_every_row_names_its_model(cli, pool_and_task, method):
    table, pool = pool_and_task
    r = cli("rank", table, "--pool", pool, "-m", *method)
    assert r.code == 0, r.err
    header, *rows = _table(r.out)
    end = header.index("docID") + len("docID")
    for row in rows:  # right-aligned under the header, whatever the id's length
        doc = "a-rather-long-candidate-id" if "a-rather-long-candidate-id" in row else "b"
        assert row.index(doc) + len(doc) == end, (header, row)
    assert {row.split()[-1] for row in rows} == {"encoder-one", "encoder-two"}  # never a blank model column


def test_a_local_models_architecture_comes_from_its_config(pool_and_task):
    from modelseek.retrieval.data.pool import load_pool
    from modelseek.retrieval.profiles import profile_for

    _, pool = pool_and_task
    profiles = [profile_for(c) for c in load_pool(pool)]
    assert [p.architecture for p in profiles] == ["bert", "bert"] and {p.origin for p in profiles} == {"model-folder"}
