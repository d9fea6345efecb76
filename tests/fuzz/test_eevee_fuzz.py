"""Property-based fuzzing of ``modelseek eevee`` beyond the table reader (tests/eevee fuzzes that): the costs
CSV, task_mapping.yaml and task_weights.yaml, a ground-truth CSV as the table, and every option of search,
sweep, tiers and importance (k lists, budgets, subsets, search sizes, seeds). Each run ends in exit 0 with
finite scores, exit 1 with located error lines naming the damaged file, or a usage error — never a traceback.

The meta-model is the closed-form ridge on a 10-model, 5-benchmark table with a one-generation search, so
one example costs milliseconds; examples are bounded and derandomised.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelseek.testing.cli import run_cli
from modelseek.testing.fuzz import NASTY_NUMBERS, assert_clean_exit, damaged, fuzz_settings

FUZZ = fuzz_settings(50)
TINY = ("--population", "6", "--keep", "3", "--children", "2", "--generations", "1", "--workers", "1",
        "--meta-model", "ridge", "--json")
OPTION_VALUES = st.one_of(st.integers(-3, 8).map(str), st.sampled_from(NASTY_NUMBERS + ("2.5", "1e3", "-0.0", "4294967296")))


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = tmp_path_factory.mktemp("eeveefuzz")
    rng = np.random.default_rng(1)
    q = rng.normal(size=10)
    vals = np.stack([q + 0.1 * rng.normal(size=10), -q, q ** 2, -0.5 * q, rng.normal(size=10), q], axis=1)
    benches = ["b1", "b1", "b2", "b3", "b4", "b5"]
    metrics = ["acc", "loss", "acc", "dice-loss", "auc", "mae"]
    table = root / "gate.csv"
    table.write_text("Model," + ",".join(benches) + "\nMetric," + ",".join(metrics) + "\n" + "".join(
        f"model{i}," + ",".join(repr(float(v)) for v in row) + "\n" for i, row in enumerate(vals)))
    costs = root / "costs.csv"
    costs.write_text("benchmark,cost\nb1,5\nb2,1\nb3,2\nb4,4\nb5,3\n")
    mapping = root / "task_mapping.yaml"
    mapping.write_text("Classification: [b1.acc, b1.loss, b2.acc]\nSegmentation: [b3.dice-loss]\n"
                       "Other: [b4.auc, b5.mae]\n")
    weights = root / "task_weights.yaml"
    weights.write_text("Classification: [0.5]\nSegmentation: 0.25\nOther: [0.25]\n")
    from modelseek.testing import make_ntcir_layout

    gt = make_ntcir_layout(root / "layout", n_tasks=5, n_models=8, seed=0) / "ground-truth.csv"
    return {"root": root, "table": table, "costs": costs, "mapping": mapping, "weights": weights, "gt": gt}


def _victim(case, key):
    dst = case["root"] / "victims" / case[key].name
    dst.parent.mkdir(exist_ok=True)
    return dst, case[key].read_bytes()


def _finite_scores(out: str) -> None:
    d = json.loads(out)
    tops = d.get("top") or [t for r in d.get("results", {}).values() for t in r["top"]] or \
        [t for t in d.get("tiers", []) if t.get("score") is not None]
    for t in tops:
        assert math.isfinite(t["score"]) and t["score"] >= 0, t
    if "importance" in d:
        assert math.isfinite(d["score"]) and all(math.isfinite(i["loss_increase"]) for i in d["importance"])


# ------------------------------------------------------------------------------------------ side files
@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_tiers_survive_damaged_costs(case, data):
    path, valid = _victim(case, "costs")
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("eevee", "tiers", "--table", case["table"], "--costs", path, "--budgets", "3,100", *TINY)
    assert_clean_exit(r, path)
    if r.code == 0:
        _finite_scores(r.out)
        for t in json.loads(r.out)["tiers"]:
            assert t.get("cost") is None or t["cost"] <= t["budget"]


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=st.sampled_from(["mapping", "weights"]))
def test_search_survives_damaged_mapping_or_weights(case, data, which):
    path, valid = _victim(case, which)
    path.write_bytes(data.draw(damaged(valid)))
    other = "weights" if which == "mapping" else "mapping"
    r = run_cli("eevee", "search", "--table", case["table"], f"--{which}", path, f"--{other}", case[other], "-k", "2",
                *TINY)
    assert_clean_exit(r, path, case[other])  # a group of the weights missing from the mapping names either
    if r.code == 0:
        _finite_scores(r.out)


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_search_survives_a_damaged_ground_truth_table(case, data):
    path, valid = _victim(case, "gt")
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("eevee", "search", "--ground-truth", path, "-k", "1", *TINY)
    assert_clean_exit(r, path)
    if r.code == 0:
        _finite_scores(r.out)


# ------------------------------------------------------------------------------------------ options
@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
@FUZZ
@given(option=st.sampled_from(["-k", "--population", "--keep", "--children", "--generations", "--seed", "--top",
                               "--workers", "--ridge-alpha"]), value=OPTION_VALUES)
def test_search_numeric_options(case, option, value):
    args = dict(zip(TINY[:-3:2], TINY[1:-3:2]))
    args["-k"] = "2"
    if option == "--workers" and value not in ("0", "1"):
        value = "1" if value.lstrip("-").isdigit() and int(value) > 1 else value  # no process pools in the fuzz
    args[option] = value
    r = run_cli("eevee", "search", "--table", case["table"], *(x for kv in args.items() for x in kv),
                "--meta-model", "ridge", "--json")
    assert_clean_exit(r)
    if r.code == 0:
        _finite_scores(r.out)
        d = json.loads(r.out)
        assert all(len(t["benchmarks"]) == int(args["-k"]) == len(set(t["benchmarks"])) for t in d["top"])


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
@FUZZ
@given(ks=st.one_of(st.sampled_from(["1-3", "2", "1,2,8", "0", "-1", "3-1", "1-", "-", ",", "", "1e3", "nan", "1-999",
                                     "99", "2,2", "1.5", " 1 , 2 ", "\u0661", "1-2-3", "-2-1"]),
                    st.text(alphabet="0123456789-, ", max_size=6)))
def test_sweep_k_lists(case, ks):
    r = run_cli("eevee", "sweep", "--table", case["table"], "--k", ks, *TINY)
    assert_clean_exit(r)
    if r.code == 0:
        _finite_scores(r.out)
        assert all(1 <= int(k) <= 5 for k in json.loads(r.out)["results"])


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
@FUZZ
@given(budgets=st.one_of(st.lists(OPTION_VALUES, min_size=1, max_size=3).map(",".join),
                         st.sampled_from(["", ",", "3,,4", "1e308", "0"])),
       ks=st.sampled_from([None, "1-2", "0", "9", "x"]))
def test_tiers_budgets_and_ks(case, budgets, ks):
    extra = ("--k", ks) if ks is not None else ()
    r = run_cli("eevee", "tiers", "--table", case["table"], "--costs", case["costs"], "--budgets", budgets, *extra,
                *TINY)
    assert_clean_exit(r)
    if r.code == 0:
        _finite_scores(r.out)
        for t in json.loads(r.out)["tiers"]:
            assert t.get("cost") is None or t["cost"] <= t["budget"]


@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
@FUZZ
@given(subset=st.one_of(st.lists(st.sampled_from(["b1", "b2", "b3", "b4", "b5", "b9", "", " b1 ", "B1", "b1.acc"]),
                                 max_size=6).map(",".join), st.sampled_from([",", ",,", "b1,,b2"])))
def test_importance_subsets(case, subset):
    r = run_cli("eevee", "importance", "--table", case["table"], "--subset", subset, *TINY)
    assert_clean_exit(r)
    if r.code == 0:
        _finite_scores(r.out)
        d = json.loads(r.out)
        assert len(d["importance"]) == len(d["subset"]) == len(set(d["subset"]))


# ------------------------------------------------------------------------------------------ regressions found here
def test_regression_costs_file_lacking_a_benchmark_is_named(case, tmp_path):
    """A costs file without a row for one of the table's benchmarks used to fail with an error naming no file."""
    costs = tmp_path / "costs.csv"
    costs.write_text("benchmark,cost\nb2,1\nb3,2\nb4,4\nb5,3\n")
    r = run_cli("eevee", "tiers", "--table", case["table"], "--costs", costs, "--budgets", "3", *TINY)
    assert r.code == 1 and r.err == f"error: {costs}: field 'cost': no cost for benchmark(s) of the table: b1\n", r.err


def test_regression_short_costs_row_is_located(case, tmp_path):
    """A costs row with fewer fields than the header was an IndexError traceback."""
    costs = tmp_path / "costs.csv"
    costs.write_text("benchmark,cost\nb1,5\nb2,1\nb3,2\nb4,4\nb5,3\n caf\u00e9\n")
    r = run_cli("eevee", "tiers", "--table", case["table"], "--costs", costs, "--budgets", "3", *TINY)
    assert r.code == 1 and r.err == f"error: {costs}:7: 1 field(s), the header has 2\n", r.err


def test_huge_children_and_generations_end_with_the_same_answer(case):
    """Found by the exploring fuzz run: a huge ``--children`` drew that many children per parent (hours).
    Draws are capped at 64 times a parent's one-swap neighbourhood, and a search whose parents stopped
    changing with every neighbour scored ends early: the same answer as the bounded run, at once."""
    base = ("eevee", "search", "--table", case["table"], "-k", "2", "--population", "3", "--keep", "2",
            "--seed", "0", "--meta-model", "ridge", "--json")
    small = run_cli(*base, "--children", "40", "--generations", "30")
    huge = run_cli(*base, "--children", "10000000", "--generations", "100000")
    assert small.code == 0 == huge.code, small.err + huge.err
    a, b = json.loads(small.out), json.loads(huge.out)
    assert [(t["benchmarks"], t["score"]) for t in a["top"]] == [(t["benchmarks"], t["score"]) for t in b["top"]]
    assert b["n_trained"] <= 10  # C(5, 2) subsets exist; the 100,000 generations stopped once converged
    assert b["n_evaluated"] <= a["n_evaluated"]


@pytest.mark.parametrize("value,code,words", [("9" * 30, 2, "must be an integer <= 2,147,483,647"),
                                              ("2000000", 1, "field 'generations': must be an integer in [0, 1000000]")])
def test_generations_are_bounded(case, value, code, words):
    """Found by the exploring fuzz run: --generations 10**400 was an OverflowError traceback from range()."""
    r = run_cli("eevee", "search", "--table", case["table"], "-k", "2", "--generations", value, "--json")
    assert r.code == code and words in r.err and "Traceback" not in r.err, r.err
