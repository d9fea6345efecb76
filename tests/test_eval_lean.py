"""``modelseek evaluate RUN -g QRELS --trec`` on its lean road (issue #38 item 8): no pandas, no SciPy; files
streamed through pyarrow a block at a time; results equal to the pandas-backed objects they replace.

The speed and memory goals are checked by ``benchmarks/eval_speed.py`` (against trec_eval's binary in the same run), not
here: these tests pin behaviour (same values, same errors, nothing heavy imported)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from modelseek import GroundTruth, InputError, Report, evaluate, read_run, read_runs
from modelseek.retrieval.data.run import Entry, Run

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("pandas", "scipy", "sklearn", "torch", "transformers", "matplotlib")


def _rows(n_topics: int, n_docs: int, seed: int) -> list[tuple[str, str, int, float]]:
    """(topic, doc, rank, score) rows, topics interleaved and ranks shuffled within topics (the reader sorts)."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_topics):
        docs = rng.choice(20 * n_docs, size=n_docs, replace=False)
        for r, (d, s) in enumerate(zip(docs, np.round(rng.random(n_docs), 2)), 1):
            rows.append((f"q{t}", f"d{d}", r, float(s)))
    order = rng.permutation(len(rows))
    return [rows[i] for i in order]


def _write_run(path: Path, rows, sep: str = " ", end: str = "\n") -> Path:
    path.write_bytes(end.join(sep.join((t, "Q0", d, str(r), f"{s}", "lean")) for t, d, r, s in rows).encode()
                     + end.encode())
    return path


def _write_qrels(path: Path, rows, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    judged = [(t, d, int(g)) for (t, d, _, _), g, keep in zip(rows, rng.integers(-1, 4, len(rows)),
                                                                rng.random(len(rows)) < 0.3) if keep]
    seen = {t for t, _, _ in judged}
    judged += [(t, d, 1) for t, d, _, _ in rows if t not in seen and not seen.add(t)]  # every topic judged
    path.write_text("".join(f"{t} 0 {d} {g}\n" for t, d, g in judged))
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A run of about 1 MB (several of the reader's 256 KiB blocks) and its qrels."""
    folder = tmp_path_factory.mktemp("lean")
    rows = _rows(700, 60, seed=3)
    return rows, _write_run(folder / "run.txt", rows), _write_qrels(folder / "qrels.txt", rows, seed=4)


def test_evaluate_trec_imports_no_heavy_library_and_prints_the_library_means(big):
    _, run, qrels = big
    code = ("import sys; from modelseek.cli.main import main; rc = main(sys.argv[1:]); "
            f"print('HEAVY', *[m in sys.modules for m in {HEAVY!r}]); sys.exit(rc)")
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code, "evaluate", str(run), "-g", str(qrels), "--trec"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "HEAVY " + " ".join(["False"] * len(HEAVY))
    rep = evaluate(read_run(run, extra_columns=True), GroundTruth.from_qrels(qrels),
                   ["ndcg@1", "ndcg@3", "ndcg@5", "mrr", "kendall"], scheme="ntcir")
    assert lines[:-1] == rep.to_trec().splitlines()
    means = {line.split("\t")[0].strip(): float(line.split("\t")[2]) for line in lines[:-1]}
    assert means["ndcg_cut_5"] == pytest.approx(rep.per_topic["ndcg@5"].mean(), abs=5e-5)


def test_a_streamed_run_equals_the_same_rows_built_in_memory(big, tmp_path):
    """Single spaces (streamed), tabs and CRLF (read whole and rewritten): the same runs, line numbers included."""
    rows, run, _ = big
    by_topic: dict[str, list[Entry]] = {}
    for line, (t, d, r, s) in enumerate(rows, 1):
        by_topic.setdefault(t, []).append(Entry(d, r, s, line))
    want = Run(by_topic, "lean")
    for path in (run, _write_run(tmp_path / "tabs.txt", rows, sep="\t"),
                 _write_run(tmp_path / "crlf.txt", rows, end="\r\n")):
        got = read_run(path)
        assert got.lines() == want.lines()
        assert [e.line for t in got for e in got[t]] == [e.line for t in want for e in want[t]]
        assert got.arrays().line.tolist() == [e.line for t in want for e in want[t]]


@pytest.mark.parametrize(("bad", "field"), [("d\x01x", "docID"), ("d9 extra", None)])
def test_a_bad_line_in_a_late_block_is_located(big, tmp_path, bad, field):
    """The fast path refuses a file whose fault comes after several good blocks; the careful path names the line."""
    rows, _, _ = big
    broken = list(rows)
    k = len(broken) - 5  # well past the first blocks
    t, _, r, s = broken[k]
    broken[k] = (t, bad, r, s)
    path = _write_run(tmp_path / "late.txt", broken)
    assert path.stat().st_size > 2 * 2**19  # past the first two of the reader's blocks
    with pytest.raises(InputError) as exc:
        read_runs(path)
    assert exc.value.line == k + 1
    if field:
        assert exc.value.field == field
    assert not [t for t in threading.enumerate() if t.name == "modelseek-read-ahead"]  # the parsing thread ended


def test_the_read_ahead_thread_hands_over_errors_and_stops_with_its_caller():
    """The reader's second thread: batches in order, an error raised in the caller's thread, and a caller that
    stops early (a file that grew while it was read) stops the thread, which never blocks on a full queue."""
    from modelseek.retrieval.data._arrow import _parsed_ahead

    assert list(_parsed_ahead(iter(range(5)))) == [0, 1, 2, 3, 4]

    def failing():
        yield 1
        raise ValueError("bad block")

    got = []
    with pytest.raises(ValueError, match="bad block"):
        for x in _parsed_ahead(failing()):
            got.append(x)
    assert got == [1]
    endless = _parsed_ahead(itertools.count())
    assert [next(endless) for _ in range(3)] == [0, 1, 2]
    endless.close()  # what a caller's return does to the generator
    assert not [t for t in threading.enumerate() if t.name == "modelseek-read-ahead"]


def test_a_report_from_columns_equals_the_report_of_its_table(big):
    _, run, qrels = big
    rep = evaluate(read_run(run), GroundTruth.from_qrels(qrels), ["ndcg@5", "mrr", "kendall", "regret@1"],
                   order="trec_eval")
    table = rep.per_topic
    again = Report(table, rep.metrics, run_id=rep.run_id, missing_topics=rep.missing_topics,
                   extra_topics=rep.extra_topics, scheme=rep.scheme, unknown_models=rep.unknown_models,
                   order=rep.order, relevance_level=rep.relevance_level, tier_source=rep.tier_source)
    assert rep.topics == list(table.index) == again.topics
    assert rep.mean() == again.mean()
    assert rep.to_trec(per_topic=True) == again.to_trec(per_topic=True)
    assert rep.to_dict() == again.to_dict()
    assert rep.to_csv(per_topic=True) == again.to_csv(per_topic=True)
    assert rep.table() == again.table() and rep.to_markdown() == again.to_markdown()
    pd.testing.assert_frame_equal(rep.by_tier(), again.by_tier())
    assert np.isnan(rep.per_topic["kendall"]).sum() == np.isnan(table["kendall"]).sum()


def test_qrels_read_without_pandas_equal_the_same_table_given_as_a_dataframe(big):
    _, _, qrels = big
    lines = [line.split() for line in qrels.read_text().splitlines()]
    frame = pd.DataFrame({"task_id": [x[0] for x in lines], "model_id": [x[2] for x in lines],
                          "f1": [float(x[3]) for x in lines], "grade": [int(x[3]) for x in lines]})
    read, given = GroundTruth.from_qrels(qrels), GroundTruth(frame)
    assert len(read) == len(given) == len(lines)
    assert read.task_ids == given.task_ids and read.model_ids == given.model_ids
    pd.testing.assert_frame_equal(read.frame, given.frame)
    assert read.criticalities == given.criticalities
    for a, b in zip(read.arrays("paper"), given.arrays("paper")):
        if isinstance(a, np.ndarray) and a.dtype != object:
            np.testing.assert_array_equal(a, b)
    t = read.task_ids[7]
    assert read.grades(t) == given.grades(t) and read.normalized(t) == given.normalized(t)
    assert read.regret(t) == given.regret(t)


def test_a_csv_ground_truth_is_read_and_scored_without_pandas(big, tmp_path):
    """The official layout (``task_id,model_id,f1``, tiers from a tasks.csv beside it) takes the same lean road
    for the table and Markdown outputs, and reads to the same ground truth as the same rows given as a
    DataFrame."""
    rows, run, _ = big
    rng = np.random.default_rng(5)
    pairs = sorted({(t, d) for t, d, _, _ in rows})
    truth = tmp_path / "ground-truth.csv"
    f1 = np.round(rng.uniform(0.05, 0.95, len(pairs)), 4)
    truth.write_text("task_id,model_id,f1\n" + "".join(f"{t},{d},{v}\n" for (t, d), v in zip(pairs, f1)))
    tasks = sorted({t for t, _ in pairs})
    (tmp_path / "tasks.csv").write_text("task_id,task_criticalness\n" + "".join(
        f"{t},{('low', 'medium', 'high')[i % 3]}\n" for i, t in enumerate(tasks)))
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    code = ("import sys; from modelseek.cli.main import main; rc = main(sys.argv[1:]); "
            f"print('HEAVY', *[m in sys.modules for m in {HEAVY!r}]); sys.exit(rc)")
    for fmt in ([], ["--markdown"]):
        out = subprocess.run([sys.executable, "-c", code, "evaluate", str(run), "-g", str(truth), "--pool", "none",
                              *fmt], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[-1] == "HEAVY " + " ".join(["False"] * len(HEAVY))
    read = GroundTruth.from_csv(truth)
    given = GroundTruth(pd.DataFrame({"task_id": [t for t, _ in pairs], "model_id": [d for _, d in pairs],
                                      "f1": f1}),
                        criticality={t: ("low", "medium", "high")[i % 3] for i, t in enumerate(tasks)})
    pd.testing.assert_frame_equal(read.frame, given.frame)
    assert read.criticalities == given.criticalities and read.model_ids == given.model_ids
    assert "tasks.csv" in read.tier_source()
    rep = evaluate(read_run(run), read, pool="none")
    assert rep.table().splitlines()[3:] == evaluate(read_run(run), given, pool="none").table().splitlines()[3:]
