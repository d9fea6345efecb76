"""Budget strings and pool lists: accepted forms, and one-line located errors through the CLI."""

from __future__ import annotations

import pytest

from modelseek.core.errors import InputError
from modelseek.retrieval.funnel import format_seconds, load_any_pool, parse_budget
from modelseek.testing.cli import assert_one_error_line


@pytest.mark.parametrize("text, seconds", [("4h", 14400), ("90m", 5400), ("3600s", 3600), ("1h30m", 5400),
                                           ("2.5h", 9000), (" 45 M ", 2700), (".5h", 1800), (120, 120.0)])
def test_budget_forms(text, seconds):
    assert parse_budget(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["4", "4x", "h", "-1h", "0s", "4h 3", "1e3s", "", "four hours", "nan", float("inf")])
def test_bad_budgets_are_one_line_errors(text):
    with pytest.raises(InputError) as exc:
        parse_budget(text)
    msg = str(exc.value)
    assert "budget" in msg and "--" not in msg and "\n" not in msg  # the parameter (the CLI shows its flag)


def test_bare_number_hint():
    with pytest.raises(InputError, match="add a unit"):
        parse_budget("240")


def test_format_seconds_round_trips_through_parse():
    for s in (5, 95, 3600, 5400, 86400 + 60):
        assert abs(parse_budget(format_seconds(s)) - s) <= 0.5


def test_id_list_pool(tmp_path):
    f = tmp_path / "cands.txt"
    f.write_text("# my candidates\nbert-base-uncased\n\nFacebookAI/roberta-base  # a comment\n"
                 + "".join(f"org/model-{i}\n" for i in range(300)), encoding="utf-8")
    pool = load_any_pool(f)
    assert len(pool) == 302
    assert pool[0].id == pool[0].hf_id == "bert-base-uncased" and pool[1].hf_id == "FacebookAI/roberta-base"


@pytest.mark.parametrize("body, line, what", [("ok/model\nnot a/valid id\n", 2, "not a Hugging Face id"),
                                              ("a/b\nc/d\na/b\n", 3, "duplicate model 'a/b' (first on line 1)"),
                                              ("# nothing\n\n", None, "at least one candidate")])
def test_id_list_errors_are_located(tmp_path, body, line, what):
    f = tmp_path / "c.txt"
    f.write_text(body, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_any_pool(f)
    assert exc.value.line == line and what in str(exc.value) and str(f) in str(exc.value)


def test_cli_errors(cli, tmp_path):
    from modelseek.testing import make_text_task, write_task_table

    data = write_task_table(make_text_task("t", n_train=20, n_val=6, n_test=6), tmp_path / "t.csv")
    pool = tmp_path / "p.txt"
    pool.write_text("a/b\nbad id!\n", encoding="utf-8")
    assert_one_error_line(cli("select", data, "--pool", pool, "--budget", "4 hours", "--out", tmp_path / "o"),
                          "--budget", "4 hours")
    assert_one_error_line(cli("select", data, "--pool", pool, "--budget", "4h", "--out", tmp_path / "o"),
                          f"{pool}:2", "hf_id", "bad id!")
    good = tmp_path / "good.txt"
    good.write_text("a/b\n", encoding="utf-8")
    assert_one_error_line(cli("select", tmp_path / "none.csv", "--pool", good, "--budget", "4h", "--out",
                              tmp_path / "o"), "none.csv")
    r = cli("select", data, "--pool", pool)  # --budget is required: a usage error
    assert r.code == 2 and "--budget" in r.err
    assert not (tmp_path / "o").exists()  # nothing was started


def test_cli_history_signals_errors(cli, tmp_path):
    """``--history-signals`` needs a history whose every task it scores, and one estimator run (plus an optional
    ``prior``): otherwise one located line, exit 1, nothing started."""
    from modelseek.retrieval.data.run import Run
    from modelseek.testing import make_text_task, write_task_table

    data = write_task_table(make_text_task("t", n_train=20, n_val=6, n_test=6), tmp_path / "t.csv")
    pool = tmp_path / "p.txt"
    pool.write_text("a/b\nc/d\n", encoding="utf-8")
    hist = tmp_path / "h.csv"
    hist.write_text("task_id,model_id,f1\nh1,a/b,0.5\nh1,c/d,0.6\nh2,a/b,0.7\nh2,c/d,0.4\n", encoding="utf-8")
    runs = tmp_path / "s.trec"
    Run.from_scores({"h1": {"a/b": 1.0, "c/d": 2.0}}, run_id="logme").write(runs)
    base = ("select", data, "--pool", pool, "--budget", "1h", "--out", tmp_path / "o", "--history-signals", runs)
    assert_one_error_line(cli(*base), str(runs), "need a history")
    assert_one_error_line(cli(*base, "--history", hist), str(runs), "no topic 'h2'")
    two = tmp_path / "two.trec"
    Run.from_scores({"h1": {"a/b": 1.0}, "h2": {"a/b": 1.0}}, run_id="x").write(two)
    with open(two, "a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in Run.from_scores({"h1": {"a/b": 1.0}, "h2": {"a/b": 1.0}},
                                                                run_id="y").lines()))
    assert_one_error_line(cli(*base[:-1], two, "--history", hist), str(two), "one estimator run", "x, y")
    assert not (tmp_path / "o").exists()
