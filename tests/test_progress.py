"""Progress on stderr (issue #36): plain periodic lines when stderr is not a terminal, never ``\\r`` frames or
cursor escapes in a log."""

from __future__ import annotations

import io
import re
import sys

import pytest

from modelseek.core.progress import progress_bar, progress_counter

LINE = re.compile(r"^(?P<desc>.+): (?P<n>\d+)(/(?P<total>\d+) \((?P<pct>\d+)%\))? \d+:\d\d:\d\d elapsed"
                  r"(, \d+:\d\d:\d\d left)?$")


def _lines(text: str) -> list[re.Match]:
    assert "\r" not in text and "\x1b" not in text, repr(text[:200])
    out = [LINE.match(x) for x in text.splitlines()]
    assert all(out), text
    return out  # type: ignore[return-value]


def test_a_counter_writes_start_and_end_lines_when_stderr_is_a_file(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("MODELSEEK_PROGRESS_INTERVAL", "3600")
    bar = progress_counter(40, desc="fine-tuning")
    for _ in range(40):
        bar.update(1)
    bar.close()
    bar.close()  # closing twice writes nothing more
    lines = _lines(err.getvalue())
    assert [(m["desc"], m["n"], m["total"], m["pct"]) for m in lines] == [("fine-tuning", "0", "40", "0"),
                                                                          ("fine-tuning", "40", "40", "100")]


def test_an_interval_of_zero_writes_every_step_with_the_time_left(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("MODELSEEK_PROGRESS_INTERVAL", "0")
    assert list(progress_bar(range(4), desc="tier 3")) == [0, 1, 2, 3]
    lines = _lines(err.getvalue())
    assert [int(m["n"]) for m in lines] == [0, 1, 2, 3, 4, 4] and [m["total"] for m in lines] == ["4"] * 6
    assert "left" in err.getvalue().splitlines()[1] and "left" not in err.getvalue().splitlines()[-1]


def test_progress_lines_are_told_from_messages():
    from modelseek.core.progress import is_progress_line

    assert is_progress_line("hist features (images): 0/16 (0%) 0:00:00 elapsed")
    assert is_progress_line("fine-tuning: 12/192 (6%) 0:01:40 elapsed, 0:25:00 left")
    assert not is_progress_line("error: a: 0/1 (0%) 0:00:00 elapsed")
    assert not is_progress_line("note: task feature 'size' covers 1 of 24 topics")


def test_a_disabled_bar_writes_nothing(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = progress_counter(3, disable=True)
    bar.update(3)
    bar.close()
    assert list(progress_bar([1, 2], disable=True)) == [1, 2] and err.getvalue() == "" and bar.n == 3


@pytest.mark.parametrize("interval", ["0", "3600"])
def test_a_command_logs_plain_lines(cli, tmp_path, monkeypatch, interval):
    """eevee sweep shows progress (no --json): in a captured stderr it is plain lines, never bar frames."""
    import numpy as np

    monkeypatch.setenv("MODELSEEK_PROGRESS_INTERVAL", interval)
    rng = np.random.default_rng(0)
    rows = ["model,benchmark,metric,value"] + [f"m{i},b{j},acc,{rng.normal():.4f}" for i in range(10) for j in range(4)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    r = cli("eevee", "sweep", "--table", tmp_path / "t.csv", "--k", "1-2", "--meta-model", "ridge", "--workers", "1")
    assert r.code == 0, r.err
    lines = _lines("\n".join(x for x in r.err.splitlines() if x.startswith("eevee sweep")))
    assert lines[0]["n"] == "0" and lines[-1]["n"] == lines[-1]["total"] == "2"
    assert "\r" not in r.err and "\x1b" not in r.err


def test_an_up_front_estimate_steadies_the_time_left():
    """Issue #55: a slow first item (a model's first load, imports) swings the mean-rate time left; pooled with an
    up-front estimate it moves less, and the measured rate takes over as items finish."""
    from modelseek.core.progress import PRIOR_ITEMS, time_left

    # 20 items expected to take 100 s; the first takes 20 s (cold), the rest 5 s each
    elapsed = [20.0 + 5.0 * (n - 1) for n in range(1, 21)]
    plain = [time_left(e, n, 20) for n, e in zip(range(1, 20), elapsed)]
    steady = [time_left(e, n, 20, expected_s=100.0) for n, e in zip(range(1, 20), elapsed)]
    assert plain[0] == 380.0 and steady[0] == pytest.approx((20 + PRIOR_ITEMS * 5) / (1 + PRIOR_ITEMS) * 19)
    assert steady[0] - steady[4] < (plain[0] - plain[4]) / 4  # over the first five items: 152 -> 100 s, not 380 -> 120
    truth = [5.0 * (20 - n) for n in range(1, 20)]
    assert all(abs(s - t) <= abs(p - t) for s, p, t in zip(steady, plain, truth))  # never further from the truth
    assert time_left(0.0, 0, 20, expected_s=100.0) == pytest.approx(100.0)  # at the start: the estimate
    assert time_left(10.0, 0, 20) == 0.0 and time_left(50.0, 20, 20, expected_s=100.0) == 0.0


def test_the_estimate_reaches_the_plain_lines(monkeypatch):
    from modelseek.core.progress import expected_duration

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("MODELSEEK_PROGRESS_INTERVAL", "3600")
    with expected_duration(3600.0):
        bar = progress_counter(4, desc="logme: candidates")
    bar.close()
    first = err.getvalue().splitlines()[0]
    assert _lines(err.getvalue()) and first.endswith(", 1:00:00 left"), first  # the estimate before any item
