"""Issue #25: same input, same answer. Permuting the rows of a table (a task file, a ground truth, a run) never
changes what rank, bench or evaluate print. Property tests through the CLI (the EEVEE, fuse and duel tournament
properties live beside those commands' tests)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402

from modelseek.cli.main import main  # noqa: E402
from modelseek.testing.fuzz import fuzz_settings  # noqa: E402


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _write_permuted(src: Path, dst: Path, perm: list[int]) -> Path:
    """``src`` with its data lines (after the header) in the order ``perm`` (indices into the data lines)."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    head, body = lines[:1], lines[1:]
    dst.write_text("".join(head + [body[i % len(body)] for i in perm]), encoding="utf-8")
    return dst


def _perm(n: int):
    return st.permutations(list(range(n)))


# ------------------------------------------------------------------------------------------ rank
@pytest.fixture(scope="module")
def task_table(tmp_path_factory) -> Path:
    from modelseek.testing import write_task_table
    from modelseek.testing.domain_text import make_domain_task

    # no split column: the validation hold-out itself must not depend on the row order
    task = make_domain_task("social", n_train=300, n_val=0, n_test=0, seed=5)
    path = tmp_path_factory.mktemp("rank") / "posts.csv"
    rows = ["text,label"] + [f'"{t}",{y}' for t, y in zip(task.train.texts, task.train.labels)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow(reason="10 s (setup and call) on 2 busy cores")
@fuzz_settings(4)
@given(perm=_perm(300))
def test_rank_does_not_depend_on_row_order(task_table, tmp_path_factory, perm):
    """300 rows without a split column (the hold-out, the 256-text sample and the embedding all read them):
    the default's printed ranking and explanation are the same for any order of the rows."""
    base = _run(["rank", task_table])
    shuffled = _write_permuted(task_table, tmp_path_factory.mktemp("p") / "posts.csv", list(perm))
    again = _run(["rank", shuffled])
    assert base[0] == again[0] == 0, base[2] + again[2]
    assert base[1] == again[1]


# ------------------------------------------------------------------------------------------ bench
@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    from modelseek.testing import make_ntcir_layout

    return make_ntcir_layout(tmp_path_factory.mktemp("layout"), n_tasks=12, n_models=5, seed=2)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@fuzz_settings(4)
@given(perm=_perm(60))
def test_bench_does_not_depend_on_ground_truth_row_order(layout, tmp_path_factory, perm):
    """The same ground truth with its 60 rows (12 tasks x 5 models) in any order: the same folds, the same table."""
    import shutil

    other = tmp_path_factory.mktemp("bench") / "layout"
    shutil.copytree(layout, other)
    _write_permuted(layout / "ground-truth.csv", other / "ground-truth.csv", list(perm))
    argv = ["--method", "avgrank", "task_knn", "--param", "encoder=hashing", "--folds", "3", "--json"]
    a, b = _run(["bench", layout, *argv]), _run(["bench", other, *argv])
    assert a[0] == b[0] == 0, a[2] + b[2]
    ja, jb = json.loads(a[1]), json.loads(b[1])
    ja.pop("path"), jb.pop("path")  # the folder names differ; everything measured must not
    assert ja == jb


# ------------------------------------------------------------------------------------------ evaluate
@pytest.fixture(scope="module")
def run_and_truth(tmp_path_factory) -> tuple[Path, Path]:
    rng = np.random.default_rng(7)
    folder = tmp_path_factory.mktemp("eval")
    topics, models = [str(1001 + i) for i in range(8)], [str(m) for m in range(1, 7)]
    truth = folder / "gt.csv"
    truth.write_text("task_id,model_id,f1\n" + "".join(f"{t},{m},{rng.uniform(0.5, 0.95):.4f}\n"
                                                         for t in topics for m in models), encoding="utf-8")
    run = folder / "run.txt"
    lines = []
    for t in topics:
        for r, m in enumerate(rng.permutation(models), start=1):
            lines.append(f"{t} Q0 {m} {r} {10 - r}.5 sys\n")
    run.write_text("".join(lines), encoding="utf-8")
    return run, truth


@fuzz_settings(5)
@given(truth_perm=_perm(48), run_perm=_perm(48))
def test_evaluate_does_not_depend_on_line_order(run_and_truth, tmp_path_factory, truth_perm, run_perm):
    """Ground-truth rows and run lines in any order (ranks are unique per topic, so the Rank column fixes each
    topic's order): the same report, to the last printed digit."""
    run, truth = run_and_truth
    folder = tmp_path_factory.mktemp("perm")
    gt2 = _write_permuted(truth, folder / "gt.csv", list(truth_perm))
    body = run.read_text(encoding="utf-8").splitlines(keepends=True)
    run2 = folder / "run.txt"
    run2.write_text("".join(body[i] for i in run_perm), encoding="utf-8")
    for extra in ([], ["--json"]):
        a = _run(["evaluate", run, "--ground-truth", truth, *extra])
        b = _run(["evaluate", run2, "--ground-truth", gt2, *extra])
        assert a[0] == b[0] == 0, a[2] + b[2]
        assert a[1] == b[1]
