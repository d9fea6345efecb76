"""EEVEE counts what it evaluated and enumerates a small space (issue #36: "112 subsets scored" where C(8, 3) = 56
exist, searched evolutionarily)."""

from __future__ import annotations

import json
import math
from itertools import combinations

from modelseek.eevee import BatchedEvaluator, MetaConfig, SearchConfig, search
from modelseek.eevee.score import normalise_subset

from .conftest import copied_signal_table, write_gate_csv

RIDGE = MetaConfig(model="ridge", seed=0)


def test_a_space_no_larger_than_the_population_is_enumerated_exactly():
    table = copied_signal_table()  # 8 benchmarks
    ev = BatchedEvaluator(table, RIDGE)
    res = search(ev, 3, SearchConfig(population=1000, generations=10, seed=0))
    assert res.exhaustive and res.n_subsets == math.comb(8, 3) == 56
    assert res.n_evaluated == 56 == res.n_trained  # each subset once, none counted twice
    every = ev.scores([normalise_subset(c) for c in combinations(table.benchmark_names, 3)])
    want = sorted(every, key=lambda s: (s.mean, s.subset))
    assert [s.subset for s in res.top] == [s.subset for s in want[:50]]  # the exact best, not a sample of it


def test_an_evolutionary_search_counts_distinct_subsets():
    table = copied_signal_table()
    res = search(BatchedEvaluator(table, RIDGE), 3, SearchConfig(population=20, keep=5, children=6, generations=4))
    assert not res.exhaustive and res.n_subsets == 56
    assert res.n_evaluated == res.n_trained <= 56  # a fresh evaluator trains each distinct subset once


def test_the_cli_says_it_enumerated(cli, tmp_path):
    path = write_gate_csv(tmp_path / "gate.csv", copied_signal_table())
    args = ["eevee", "search", "--table", path, "-k", "3", "--meta-model", "ridge", "--workers", "1"]
    r = cli(*args)
    assert r.code == 0, r.err
    assert "k=3; exhaustive: all 56 subsets scored (C(8, 3) = 56 exist)" in r.out, r.out
    r = cli(*args, "--json")
    out = json.loads(r.out)
    assert (out["exhaustive"], out["n_evaluated"], out["n_subsets"]) == (True, 56, 56)
    r = cli(*args, "--population", "10", "--keep", "3", "--children", "2", "--generations", "1")
    assert r.code == 0 and "evolutionary search: " in r.out and " distinct subsets scored of C(8, 3) = 56" in r.out
