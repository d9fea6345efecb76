"""Property-based fuzzing of ``modelseek finetune`` (issue #14): the pool (YAML and models.csv), the task folder
(train/val/test JSONL, tasks.csv), the recipe (YAML/JSON and ``--set``), the job store (a SQLite file damaged,
a text file, a folder, an empty file) and ``--seeds``. Each run ends in exit 0 with a ground truth that reads
back, exit 1 with located error lines naming the damaged file, or a usage error — never a traceback.

Training is replaced by :class:`modelseek.testing.finetune.FakeTrainer` (a known F1 per job, no model is
loaded): this suite tests the input layer and the store, not the optimiser (tests/finetune does that).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelseek.testing import make_ntcir_layout
from modelseek.testing.cli import run_cli
from modelseek.testing.finetune import FakeTrainer
from modelseek.testing.fuzz import NASTY_NUMBERS, assert_clean_exit, damaged, fuzz_settings

FUZZ = fuzz_settings(50)
FEW = fuzz_settings(15)


@pytest.fixture(autouse=True)
def fake_training(monkeypatch):
    import modelseek.retrieval.finetune.protocol as protocol

    monkeypatch.setattr(protocol, "finetune", FakeTrainer())  # run_job looks it up at call time


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    import modelseek.retrieval.finetune.protocol as protocol

    mp = pytest.MonkeyPatch()
    mp.setattr(protocol, "finetune", FakeTrainer())
    root = tmp_path_factory.mktemp("ftfuzz")
    layout = make_ntcir_layout(root / "layout", n_tasks=2, n_models=2, n_train=12, n_val=6, n_test=6, seed=0)
    (layout / "ground-truth.csv").unlink()
    pool = root / "pool.yaml"
    pool.write_text("name: tiny\ncandidates:\n  - {id: \"1\", path: \"/nonexistent/m1\"}\n"
                    "  - {id: \"2\", path: \"/nonexistent/m2\"}\n", encoding="utf-8")
    recipe = root / "recipe.yaml"
    recipe.write_text("lr: 0.005\nmax_epochs: 2\npatience: 1\nbatch_size: 8\n", encoding="utf-8")
    recipe_json = root / "recipe.json"
    recipe_json.write_text('{"lr": 0.005, "max_epochs": 2, "patience": 1, "batch_size": 8}', encoding="utf-8")
    store = root / "done.jobs.sqlite"
    r = run_cli("finetune", "--pool", pool, "--tasks", layout, "--out", root / "gt.csv", "--store", store,
                "--recipe", recipe, "--json")
    mp.undo()
    assert r.code == 0, r.err
    return {"root": root, "layout": layout, "pool": pool, "models": layout / "models.csv", "recipe": recipe,
            "recipe_json": recipe_json, "store": store, "gt": root / "gt.csv"}


def _run(case, *, pool=None, tasks=None, recipe=None, store=None, extra=()):
    work = case["root"] / "victims"
    work.mkdir(exist_ok=True)
    out = work / "gt.csv"
    out.unlink(missing_ok=True)
    if store is None:
        store = work / "fresh.sqlite"
        store.unlink(missing_ok=True)
    r = run_cli("finetune", "--pool", pool or case["pool"], "--tasks", tasks or case["layout"], "--out", out,
                "--store", store, "--recipe", recipe or case["recipe"], *extra, "--json")
    return r, out


def _check_truth(out: Path, seeds=(0,)) -> None:
    """A ground truth written at exit 0 holds FakeTrainer's F1 (the mean over the seeds) for every job."""
    from modelseek import GroundTruth

    truth = GroundTruth.from_csv(out)
    for t in truth.task_ids:
        for m, f1 in truth.f1(t).items():
            assert f1 == pytest.approx(sum(FakeTrainer.f1(t, m, s) for s in seeds) / len(seeds), abs=1e-6)


# ------------------------------------------------------------------------------------------ pool
@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=st.sampled_from(["pool", "models"]))
def test_finetune_survives_a_damaged_pool(case, data, which):
    path = case["root"] / "victims" / case[which].name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data.draw(damaged(case[which].read_bytes())))
    r, out = _run(case, pool=path)
    assert_clean_exit(r, path)
    if r.code == 0:
        _check_truth(out)


# ------------------------------------------------------------------------------------------ tasks
@pytest.mark.slow(reason="8 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), name=st.sampled_from(["train.jsonl", "val.jsonl", "test.jsonl", "../../../tasks.csv"]))
def test_finetune_survives_a_damaged_task_folder(case, data, name):
    layout = case["root"] / "victims" / "layout"
    shutil.rmtree(layout, ignore_errors=True)
    shutil.copytree(case["layout"], layout)
    path = (layout / "task-data" / "train-tasks" / "1001" / name).resolve()
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    r, out = _run(case, tasks=layout)
    assert_clean_exit(r, path, path.parent)
    if r.code == 0:
        _check_truth(out)


# ------------------------------------------------------------------------------------------ recipe
@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=st.sampled_from(["recipe", "recipe_json"]))
def test_finetune_survives_a_damaged_recipe(case, data, which):
    path = case["root"] / "victims" / case[which].name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data.draw(damaged(case[which].read_bytes())))
    r, out = _run(case, recipe=path)
    assert_clean_exit(r, path)
    if r.code == 0:
        _check_truth(out)


@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
@FUZZ
@given(key=st.sampled_from(["lr", "max_epochs", "patience", "batch_size", "grad_accum", "weight_decay", "precision",
                            "warmup_ratio", "cpu_threads", "max_length", "nonsense"]),
       value=st.one_of(st.sampled_from(NASTY_NUMBERS), st.integers(-3, 40).map(str), st.sampled_from(["bf16", "x=y"])))
def test_finetune_set_overrides(case, key, value):
    r, out = _run(case, extra=("--set", f"{key}={value}"))
    assert_clean_exit(r, ok_codes=(0, 1, 2))
    if r.code == 1:
        assert f"'{key}'" in r.err or key in r.err, r.err
    if r.code == 0:
        _check_truth(out)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FEW
@given(seeds=st.lists(st.one_of(st.integers(-2, 3).map(str), st.sampled_from(NASTY_NUMBERS)), min_size=1, max_size=3))
def test_finetune_seeds(case, seeds):
    r, out = _run(case, extra=("--seeds", *seeds))
    assert_clean_exit(r)
    if r.code == 0:
        _check_truth(out, seeds=sorted({int(s) for s in seeds}))


# ------------------------------------------------------------------------------------------ job store
@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_finetune_survives_a_damaged_store(case, data):
    store = case["root"] / "victims" / "damaged.sqlite"
    store.parent.mkdir(exist_ok=True)
    for p in store.parent.glob("damaged.sqlite*"):
        p.unlink(missing_ok=True)  # a closing connection of the last example may remove its -wal meanwhile
    store.write_bytes(data.draw(damaged(case["store"].read_bytes(), max_damages=2)))
    r, out = _run(case, store=store)
    assert_clean_exit(r, store)
    if r.code == 0:
        _check_truth(out)


@pytest.mark.parametrize("what", ["dir", "text", "empty", "missing-parent"])
def test_store_that_is_not_a_database(case, tmp_path, what):
    store = tmp_path / "store.sqlite"
    if what == "dir":
        store.mkdir()
    elif what == "text":
        store.write_text("task_id,model_id\n1,2\n")
    elif what == "empty":
        store.write_bytes(b"")
    else:
        store = tmp_path / "file" / "store.sqlite"
        (tmp_path / "file").write_text("x")
    r, out = _run(case, store=store)
    assert_clean_exit(r, store)
    if what == "empty":  # an empty file is a new SQLite database
        assert r.code == 0
        _check_truth(out)
    else:
        assert r.code in (1, 2)


# ------------------------------------------------------------------------------------------ regressions found here
@pytest.mark.parametrize("occurrence", [0, 1])
def test_regression_store_with_a_damaged_key_is_refused_not_waited_on(case, tmp_path, occurrence):
    """A store whose primary-key index disagrees with its table (one key's bytes changed, in the table row
    or in the index entry) made ``finetune`` wait forever: the job was "not done" by one lookup and "done"
    by another, so it was never claimable and never finished. Now the store is checked on opening."""
    import sqlite3

    db = sqlite3.connect(case["store"])
    try:  # the rows into the main file (the store writes through a WAL)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        key = db.execute("SELECT key FROM jobs ORDER BY key LIMIT 1").fetchone()[0].encode()
    finally:
        db.close()
    data = case["store"].read_bytes()
    at = [i for i in range(len(data)) if data.startswith(key, i)]
    assert len(at) >= 2  # the table row and the index entry
    i = at[occurrence]
    store = tmp_path / "store.sqlite"
    store.write_bytes(data[:i] + (b"0" if key[:1] != b"0" else b"1") + data[i + 1:])
    r, _ = _run(case, store=store)
    assert r.code == 1 and r.err.count("\n") == 1, r.err
    assert r.err.startswith(f"error: {store}: damaged job store (SQLite integrity_check: "), r.err


def test_regression_models_csv_without_rows_duplicates_or_names(case, tmp_path):
    """A header-only models.csv and a duplicate id named no file; a row without a name (no model to load)
    failed inside the grid's job builder without the pool file."""
    pool = tmp_path / "models.csv"
    for text, want in (("model_id,model_name\n", "a pool needs at least one candidate (no rows)"),
                       ("model_id,model_name\n1,a/b\n1,a/c\n", "3: field 'model_id': duplicate candidate id '1' "
                                                              "(first on line 2)"),
                       ("model_id,model_name\n1,a/b\n2,\n", "field 'hf_id': candidate '2' has neither hf_id nor "
                                                            "path (fine-tuning loads it)")):
        pool.write_text(text)
        r, _ = _run(case, pool=pool)
        expected = f"error: {pool}:{want}\n" if want[0].isdigit() else f"error: {pool}: {want}\n"
        assert r.code == 1 and r.err == expected, r.err


def test_regression_store_path_below_a_file(case, tmp_path):
    (tmp_path / "file").write_text("x")
    store = tmp_path / "file" / "store.sqlite"
    r, _ = _run(case, store=store)
    assert r.code == 1 and r.err.startswith(f"error: {store}: cannot make the job store's folder"), r.err


def test_store_with_a_damaged_result_is_recomputed(case, tmp_path, caplog):
    """Found by the exploring fuzz run: a job's stored result that is not JSON was a JSONDecodeError traceback.
    Since issue #36 every row carries a checksum: the damaged row is reported once, kept in a copy of the store,
    and its job runs again (the ground truth is whole and right)."""
    import logging
    import sqlite3

    store = tmp_path / "store.sqlite"
    src, dst = sqlite3.connect(case["store"]), sqlite3.connect(store)
    src.backup(dst)  # the store is in WAL mode: a file copy could miss the log
    src.close()
    dst.close()
    with sqlite3.connect(store) as db:
        key = db.execute("SELECT key FROM jobs WHERE result IS NOT NULL LIMIT 1").fetchone()[0]
        db.execute("UPDATE jobs SET result = ? WHERE key = ?", ('{"f1": 0.5, "per_epoch": [', key))
    with caplog.at_level(logging.WARNING):
        r, out = _run(case, store=store)
    assert r.code == 0 and "Traceback" not in r.err, r.err
    summary = json.loads(r.out)
    assert (summary["ran"], summary["done"]) == (1, summary["jobs"])
    assert caplog.text.count("fail their checksum") == 1 and key[:12] in caplog.text
    _check_truth(out)
    assert len(list(tmp_path.glob("store.sqlite.damaged-*"))) == 1


@pytest.mark.parametrize("byte", [b"\xf3", b"\r"], ids=["not-utf8", "carriage-return"])
def test_store_with_damaged_schema_text_is_one_located_line(case, byte):
    """Found by an exploring run (seed 6, scale 2): a schema name in the store holding a byte that is not UTF-8
    was a UnicodeDecodeError traceback, and one holding \\r split the error over two lines."""
    store = case["root"] / "victims" / "schema.sqlite"
    store.parent.mkdir(exist_ok=True)
    for p in store.parent.glob("schema.sqlite*"):
        p.unlink(missing_ok=True)
    from modelseek.retrieval.finetune.store import JobStore

    with JobStore(store):  # a new, empty store; closing it checkpoints the schema into the file
        pass
    for p in store.parent.glob("schema.sqlite-*"):
        p.unlink(missing_ok=True)
    raw = store.read_bytes()
    at = raw.index(b"qlite_autoindex_claims_1") - 1  # the 's' of an index name in sqlite_master
    store.write_bytes(raw[:at] + byte + raw[at + 1:])
    r, _ = _run(case, store=store)
    assert r.code == 1 and "schema.sqlite" in r.err
    assert_clean_exit(r, store)
