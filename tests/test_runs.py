"""TREC run files: round trip, tie policy, and the official validation rules through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelseek import Run, ValidationError, read_run, read_runs, validate_run, write_runs
from modelseek.core.errors import InputError

DOCS = [str(i) for i in range(1, 21)]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def full_topic(topic: str, run_id: str = "r1", docs=DOCS) -> list[str]:
    return [f"{topic} Q0 {d} {i + 1} {1.0 - i * 0.01:.2f} {run_id}" for i, d in enumerate(docs)]


def test_from_scores_orders_and_breaks_ties_by_natural_docid(tmp_path):
    run = Run.from_scores({"t": {"10": 0.5, "2": 0.5, "1": 0.9, "3": float("nan")}}, "x")
    assert run.ranking("t") == ["1", "2", "10", "3"]
    assert [e.rank for e in run["t"]] == [1, 2, 3, 4]
    p = tmp_path / "run.txt"
    run.write(p)
    back = read_run(p)
    assert back.ranking("t") == run.ranking("t")
    assert back.run_id == "x"


def test_runs_are_immutable_and_derived_runs_are_new():
    run = Run.from_scores({"t": {"a": 1.0}}, "x")
    with pytest.raises(TypeError):
        run["t"] = ()  # type: ignore[index]
    with pytest.raises(ValueError):  # the columns are read-only views
        run.arrays().score[0] = 2.0
    other = run.with_id("y")
    assert other is not run and run.run_id == "x" and other.run_id == "y"


def test_several_runs_in_one_file(tmp_path):
    p = tmp_path / "runs.txt"
    write_runs(p, [Run.from_scores({"t": {"1": 1.0}}, "a"), Run.from_scores({"t": {"1": 1.0}}, "b")])
    assert list(read_runs(p)) == ["a", "b"]
    with pytest.raises(InputError, match="holds 2 runs"):
        read_run(p)


def test_valid_file_passes_silently(tmp_path, cli):
    p = write_lines(tmp_path / "ok.txt", full_topic("1") + full_topic("2"))
    runs = validate_run(p, topics=["1", "2"], docs=DOCS)
    assert list(runs) == ["r1"]
    r = cli("validate", p, "--quiet")
    assert r.code == 0 and r.out == "" and r.err == ""


@pytest.mark.parametrize("mutate,line,field", [
    (lambda ls: ls[:4] + ["1 Q0 5 5 0.96"] + ls[5:], 5, "RunID"),                      # missing column
    (lambda ls: ls[:2] + ["1 Q0 3 three 0.98 r1"] + ls[3:], 3, "Rank"),                # non-numeric rank
    (lambda ls: ls + [ls[6]], 21, "docID"),                                             # duplicate line
    (lambda ls: ls[:19] + ["1 Q0 021 20 0.81 r1"], 20, "docID"),                        # unknown docID
    (lambda ls: ls[:19], 1, "docID"),                                                   # 19 of 20 models
    (lambda ls: ls[:1] + ["1 Q0 2 2 1.50 r1"] + ls[2:], 2, "Score"),                    # rank/score disagree
    (lambda ls: ls[:1] + ["1 XX 2 2 0.99 r1"] + ls[2:], 2, "Q0"),
])
def test_bad_run_files_name_file_line_field(tmp_path, cli, mutate, line, field):
    p = write_lines(tmp_path / "bad.txt", mutate(full_topic("1")))
    with pytest.raises(ValidationError) as exc:
        validate_run(p, docs=DOCS)
    assert any(e.line == line and e.field == field for e in exc.value.problems), exc.value.problems
    r = cli("validate", p)
    assert r.code == 1
    assert f"bad.txt:{line}: field '{field}'" in r.err


def test_zero_padded_docid_gets_a_hint(tmp_path):
    lines = full_topic("1")
    lines[0] = "1 Q0 01 1 1.00 r1"
    p = write_lines(tmp_path / "pad.txt", lines)
    with pytest.raises(ValidationError, match="no zero padding"):
        validate_run(p, docs=DOCS)


def test_more_than_five_run_ids(tmp_path):
    lines = [ln for i in range(6) for ln in full_topic("1", f"r{i}")]
    with pytest.raises(ValidationError, match="at most 5"):
        validate_run(write_lines(tmp_path / "six.txt", lines), docs=DOCS)


def test_missing_topic_is_reported(tmp_path, cli):
    p = write_lines(tmp_path / "t.txt", full_topic("1"))
    topics = tmp_path / "topics.txt"
    topics.write_text("1\n2\n")
    r = cli("validate", p, "--topics", topics)
    assert r.code == 1 and "misses 1 topic(s): 2" in r.err


def test_subtask_b_id_rules(tmp_path):
    ok = write_lines(tmp_path / "b.txt", ["test-0001-0011 Q0 7 1 0.9 r", "test-0001-0011 Q0 12 2 0.1 r"])
    validate_run(ok, subtask="B", docs=["07", "12"], topics=["test-0001-0011.png"])
    bad = write_lines(tmp_path / "b2.txt", ["q1.png Q0 007 1 0.9 r"])
    with pytest.raises(ValidationError) as exc:
        validate_run(bad, subtask="B")
    fields = {p.field for p in exc.value.problems}
    assert fields == {"topicID", "docID"}


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_evaluate_rejects_malformed_file(tmp_path, cli, tiny_layout):
    p = write_lines(tmp_path / "m.txt", ["1001 Q0 1 x 0.5 r"])
    r = cli("evaluate", p, "--ground-truth", tiny_layout / "ground-truth.csv")
    assert r.code == 1 and "m.txt:1: field 'Rank'" in r.err and len(r.err.strip().splitlines()) == 1


def test_numeric_looking_ids_keep_their_text(tmp_path):
    # the C reader must not read ids as numbers: 001 and 1 are two topics, 01 and 1 two docIDs
    p = tmp_path / "ids.txt"
    p.write_text("001 Q0 01 1 0.5 r\n1 Q0 1 1 0.4 r\n001 Q0 1 2 0.3 r\n")
    run = read_run(p)
    assert list(run) == ["001", "1"] and run.ranking("001") == ["01", "1"] and run.ranking("1") == ["1"]


def test_rows_out_of_order_are_grouped_by_topic_then_rank_then_line(tmp_path):
    p = tmp_path / "mixed.txt"
    p.write_text("b Q0 x 2 0.1 r\na Q0 y 2 0.5 r\nb Q0 z 1 0.9 r\na Q0 w 1 0.6 r\nb Q0 v 1 0.2 r\n")
    run = read_run(p)
    assert list(run) == ["b", "a"]
    assert run.ranking("b") == ["z", "v", "x"] and run.ranking("a") == ["w", "y"]
    assert [e.line for e in run["b"]] == [3, 5, 1]


def test_validate_help_says_what_it_prints(cli):
    r = cli("validate", "--help")
    assert r.code == 0 and "Silent" not in r.out and "'ok' line" in r.out


def test_the_fast_and_careful_paths_give_the_same_runs(tmp_path):
    """One reader, two paths: any plain white-space separated file takes pyarrow's path (single spaces, tabs,
    runs of blanks, CRLF), anything else the careful line reader; the same lines give the same runs (order,
    ranks, scores, line numbers)."""
    import numpy as np

    from modelseek.retrieval.data import run as R

    rng = np.random.default_rng(0)
    rows = [(f"{t:03d}", str(d), int(r), float(s), rid) for rid in ("a", "b") for t in range(7)
            for r, (d, s) in enumerate(zip(rng.permutation(30)[:9], np.round(rng.random(9), 2)), 1)]
    rng.shuffle(rows)
    lines = [(t, "Q0", d, str(r), f"{s}", rid) for t, d, r, s, rid in rows]
    single = tmp_path / "single.txt"
    single.write_text("\n".join(" ".join(x) for x in lines) + "\n")
    tabs = tmp_path / "tabs.txt"
    tabs.write_text("\n".join("\t".join(x) for x in lines) + "\n")
    mixed = tmp_path / "mixed.txt"
    mixed.write_bytes(("\r\n".join(" \t " + "  ".join(x) + " " for x in lines) + "\r\n").encode())
    blank = tmp_path / "blank.txt"  # a blank line: the careful path numbers the lines
    blank.write_text("\n".join(" ".join(x) for x in lines[:5]) + "\n\n" + "\n".join(" ".join(x) for x in lines[5:]))
    data = single.read_bytes()
    for p in (single, tabs, mixed):
        assert R._parse_arrow(p, True) is not None
    assert R._parse_arrow(blank, True) is None
    two = tmp_path / "two-spaces.txt"
    two.write_bytes(b"1 Q0  d 1 0.5 r\n")
    assert R._parse_arrow(two, True) is not None  # split() reads six columns, so does the fast path
    two.write_bytes(b"1 Q0  1 0.5 r\n")
    assert R._parse_arrow(two, True) is None  # five, one empty field: the careful path locates it
    careful = R._build(single, R._parse_careful(single, data.decode(), None, True), None)
    for p in (single, tabs, mixed):
        got = read_runs(p)
        assert list(got) == list(careful)
        for rid in careful:
            assert got[rid].lines() == careful[rid].lines()
            assert [e.line for t in got[rid] for e in got[rid][t]] == [e.line for t in careful[rid] for e in careful[rid][t]]
    got = read_runs(blank)
    numbered = sorted(e.line for rid in got for t in got[rid] for e in got[rid][t])
    assert numbered == [*range(1, 6), *range(7, len(lines) + 2)]  # line 6 is the blank one


def test_a_second_run_id_or_q0_value_blocks_into_the_file_is_read_as_the_careful_path_reads_it(tmp_path):
    """The fast path keeps no codes for a column while it has one value (RunID, Q0): a second value that first
    appears megabytes into the file, past many of the reader's blocks, still gives every line its own run, and
    validation still sees the Q0 of every line."""
    from modelseek.retrieval.data import run as R

    n = 120_000  # about 3 MB: several of the reader's blocks
    lines = [f"{i // 100} {'0' if i == n - 7 else 'Q0'} d{i % 100} {i % 100 + 1} {1 - (i % 100) / 100:.2f} "
             f"{'late' if i >= n - 1000 else 'early'}" for i in range(n)]
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    fast = R._parse_arrow(path, True)
    assert fast is not None
    careful = R._build(path, R._parse_careful(path, path.read_text(), None, True), None)
    got = read_runs(path)
    assert list(got) == list(careful) == ["early", "late"]
    for rid in careful:
        assert got[rid].lines() == careful[rid].lines()
    with pytest.raises(ValidationError) as e:
        validate_run(path)
    assert any(p.line == n - 6 and "expected 'Q0', found '0'" in p.message for p in e.value.problems)
    lines[n - 3] = lines[n - 3].replace(" Q0 ", "  ", 1)  # an empty Q0 field in the last block
    path.write_text("\n".join(lines) + "\n")
    assert R._parse_arrow(path, False) is None  # the careful path then locates it
    with pytest.raises(InputError, match=f"run.txt:{n - 2}: .*expected 6 columns"):
        read_runs(path)


@pytest.mark.parametrize("content", [b"", b"\n\n", b"  \n\t\n"])
def test_empty_run_files_are_located_errors(tmp_path, cli, content):
    p = tmp_path / "empty.txt"
    p.write_bytes(content)
    r = cli("evaluate", p, "-g", p)
    assert r.code == 1 and "Traceback" not in r.err and str(p) in r.err
    with pytest.raises(InputError, match="run file is empty"):
        read_runs(p)


def test_natural_order_is_the_order_of_natural_key():
    """The flat key for ids like ``q12`` gives the order of natural_key, on any mix of ids (ties stable)."""
    import random

    from modelseek.retrieval.data.run import natural_key, natural_order

    rng = random.Random(0)
    alphabet = ["", "a", "b", "q", "Q", "-", "_", "0", "1", "5", "9", "٣"]
    for _ in range(2000):
        ids = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(1, 12))]
        assert natural_order(ids) == sorted(range(len(ids)), key=lambda i: natural_key(ids[i])), ids
    for _ in range(2000):  # one shared text, then digits (the fast road), now and then broken
        prefix = rng.choice(["", "q", "v1-", "topic_", "٣"])
        tails = ["".join(rng.choice("0123459") for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(2, 9))]
        ids = [prefix + t for t in tails]
        if rng.random() < 0.2:
            ids[rng.randrange(len(ids))] = prefix + rng.choice(["", "a", "٣", "1a", "-1", "0" * 19 + "1"])
        assert natural_order(ids) == sorted(range(len(ids)), key=lambda i: natural_key(ids[i])), ids
    assert [["q10", "q9", "7", "q09", "a"][i] for i in natural_order(["q10", "q9", "7", "q09", "a"])] == \
        ["7", "a", "q9", "q09", "q10"]
