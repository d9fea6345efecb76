"""Order invariance (issue #25): EEVEE gives the same subsets and scores, to the last digit, for any order of
the table's rows and columns and for its GATE, wide and tidy forms; and every result states the baseline it
must beat (the training models' means) and the gain over it.

The property test permutes a 10-model table (rows, columns, the tidy file's lines) and writes it in a drawn
layout, then runs a drawn command through the CLI and compares its JSON with the canonical file's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelseek.eevee import BatchedEvaluator, MetaConfig, Table, load_table
from modelseek.testing.cli import run_cli
from modelseek.testing.fuzz import fuzz_settings

MODELS = ("zeta", "alpha", "mu", "beta", "omega", "kappa", "delta", "chi", "eta", "nu")
COLUMNS = (("mmlu", "acc"), ("mmlu", "loss"), ("gsm8k", "acc"), ("arc", "dice-loss"), ("bbh", "auc"),
           ("drop", "mae"), ("hellaswag", "acc"))
TINY = ("--population", "8", "--keep", "3", "--children", "2", "--generations", "2", "--workers", "1", "--json")
COMMANDS = {
    "search": ("search", "-k", "3"),
    "sweep": ("sweep", "--k", "1-2"),
    "tiers": ("tiers", "--budgets", "3,7", "--k", "1-3"),
    "importance": ("importance", "-k", "2"),
}


def _values() -> np.ndarray:
    rng = np.random.default_rng(11)
    q = rng.normal(size=(len(MODELS), 2))
    v = q @ rng.normal(size=(2, len(COLUMNS))) + 0.3 * rng.normal(size=(len(MODELS), len(COLUMNS)))
    v[3, 2] = np.nan
    return v


VALUES = _values()


def write(path: Path, layout: str, rows, cols, line_order=None) -> Path:
    """The table with its rows and columns in the given order, as a GATE, wide or tidy CSV."""
    fmt = lambda x: "" if np.isnan(x) else repr(float(x))  # noqa: E731
    if layout == "gate":
        lines = ["Model," + ",".join(COLUMNS[j][0] for j in cols), "Metric," + ",".join(COLUMNS[j][1] for j in cols)]
        lines += [MODELS[i] + "," + ",".join(fmt(VALUES[i, j]) for j in cols) for i in rows]
    elif layout == "wide":
        lines = ["model," + ",".join(".".join(COLUMNS[j]) for j in cols)]
        lines += [MODELS[i] + "," + ",".join(fmt(VALUES[i, j]) for j in cols) for i in rows]
    else:
        cells = [(i, j) for i in rows for j in cols if not np.isnan(VALUES[i, j])]
        if line_order is not None:
            cells = [cells[k] for k in line_order(len(cells))]
        lines = ["model,benchmark,metric,value"] + [f"{MODELS[i]},{COLUMNS[j][0]},{COLUMNS[j][1]},{fmt(VALUES[i, j])}"
                                                    for i, j in cells]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def side(tmp_path_factory):
    root = tmp_path_factory.mktemp("eevee-order")
    costs = root / "costs.csv"
    costs.write_text("benchmark,cost\nmmlu,4\ngsm8k,1\narc,2\nbbh,3\ndrop,2\nhellaswag,5\n")
    mapping = root / "task_mapping.yaml"
    mapping.write_text("Knowledge: [mmlu, arc]\nReasoning: [gsm8k.acc, bbh, drop]\n")
    weights = root / "task_weights.yaml"
    weights.write_text("Knowledge: 0.6\nReasoning: [0.3]\n")
    return {"--costs": costs, "--mapping": mapping, "--weights": weights}


def _run(table: Path, cmd: str, model: str, side: dict) -> dict:
    extra = [x for k, p in side.items() for x in (k, p)]
    r = run_cli("eevee", *COMMANDS[cmd], "--table", table, "--meta-model", model, *extra, *TINY)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    for drop in ("wall_s", "n_evaluated", "n_trained", "table"):  # timings; counts are checked below
        out.pop(drop, None)
    for res in out.get("results", {}).values():
        res.pop("wall_s", None)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory, side):
    root = tmp_path_factory.mktemp("eevee-order-ref")
    canon = write(root / "canonical.csv", "gate", sorted(range(len(MODELS)), key=MODELS.__getitem__),
                  sorted(range(len(COLUMNS)), key=COLUMNS.__getitem__))
    return {(cmd, model): _run(canon, cmd, model, side) for cmd in COMMANDS for model in ("mlp", "ridge")}


@pytest.mark.slow(reason="13 s (setup and call) on 2 busy cores")
@fuzz_settings(16)
@given(rows=st.permutations(range(len(MODELS))), cols=st.permutations(range(len(COLUMNS))),
       layout=st.sampled_from(["gate", "wide", "tidy"]), cmd=st.sampled_from(sorted(COMMANDS)),
       model=st.sampled_from(["mlp", "ridge"]), seed=st.integers(0, 2**32 - 1))
def test_any_row_column_order_and_layout_gives_the_same_answer(tmp_path_factory, side, reference, rows, cols,
                                                                 layout, cmd, model, seed):
    shuffle = lambda n: np.random.default_rng(seed).permutation(n)  # noqa: E731  (the tidy file's lines)
    path = write(tmp_path_factory.mktemp("perm") / f"{layout}.csv", layout, rows, cols, shuffle)
    assert _run(path, cmd, model, side) == reference[(cmd, model)]  # every subset and score, every digit


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_the_issue_table_forms_agree_in_the_printed_output(tmp_path):
    """The issue's case: wide, tidy, columns sorted and rows shuffled printed four different answers."""
    rng = np.random.default_rng(3)
    rows, cols = list(range(len(MODELS))), list(range(len(COLUMNS)))
    files = [write(tmp_path / "wide.csv", "wide", rows, cols),
             write(tmp_path / "tidy.csv", "tidy", rows, cols, lambda n: rng.permutation(n)),
             write(tmp_path / "sorted.csv", "wide", rows, sorted(cols, key=lambda j: ".".join(COLUMNS[j]))),
             write(tmp_path / "shuffled.csv", "wide", list(rng.permutation(rows)), cols)]
    outs = []
    for f in files:
        r = run_cli("eevee", "search", "--table", f, "-k", "3", "--population", "30", "--generations", "2",
                    "--workers", "1", "--top", "5")
        assert r.code == 0, r.err
        outs.append(r.out.splitlines()[1:])  # all but the first line (the wall time)
    assert outs[0] == outs[1] == outs[2] == outs[3]
    assert outs[0][0].startswith("honest loss (nested") and any(x.startswith("baseline to beat: ") for x in outs[0])
    assert sum(1 for x in outs[0] if x[:3].strip().isdigit()) == 5  # the top 5 (in-sample)


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_the_baseline_is_the_training_means_and_the_gain_is_printed(tmp_path, cli):
    """The baseline is each split's training means scored by the meta-model's test loss; the ridge with no
    input predicts exactly those means, so it scores the baseline. Every command prints both."""
    path = write(tmp_path / "t.csv", "wide", range(len(MODELS)), range(len(COLUMNS)))
    table = load_table(path)
    for meta in (MetaConfig(), MetaConfig(leaky=True), MetaConfig(loss_scale="split")):
        ev = BatchedEvaluator(table, meta)
        base = ev.baseline()
        d = ev.data
        want = []
        for s, (tr, te) in enumerate(d.splits):  # by hand: z-scored test values against the training means
            mean = d.Xtr[s].double().numpy().mean(0)
            want.append(float((((d.Xte[s].double().numpy() - mean) ** 2) * d.Ate[s].double().numpy()).sum()))
        np.testing.assert_allclose(base.per_split, want, rtol=1e-12)
        assert base.subset == () and base.mean > 0
    ridge = BatchedEvaluator(table, MetaConfig(model="ridge"))
    np.testing.assert_allclose(ridge.score(()).per_split, ridge.baseline().per_split, rtol=1e-6)
    r = cli("eevee", "search", "--table", path, "-k", "2", *TINY)
    j = json.loads(r.out)
    base = BatchedEvaluator(table).baseline().mean
    assert j["baseline"]["score"] == base and "training models' mean" in j["baseline"]["what"]
    assert all(t["gain"] == base - t["score"] for t in j["top"])
    for cmd in COMMANDS:
        args = ("--costs", tmp_path / "c.csv") if cmd == "tiers" else ()
        (tmp_path / "c.csv").write_text("benchmark,cost\nmmlu,4\ngsm8k,1\narc,2\nbbh,3\ndrop,2\nhellaswag,5\n")
        r = cli("eevee", *COMMANDS[cmd], "--table", path, *args, *TINY[:-1])
        assert r.code == 0, r.err
        line = next(x for x in r.out.splitlines() if x.startswith("baseline to beat: "))
        assert f"{base:.4f}" in line and "gain" in line


def test_canonical_form_is_sorted_and_idempotent():
    t = Table(VALUES, MODELS, tuple(c[0] for c in COLUMNS), tuple(c[1] for c in COLUMNS), (False,) * len(COLUMNS))
    c = t.canonical()
    assert list(c.models) == sorted(MODELS) and c.columns == sorted(t.columns)
    assert c.canonical() is c
    i, j = c.models.index("beta"), c.columns.index("gsm8k.acc")
    assert np.isnan(c.values[i, j]) and int(np.isnan(c.values).sum()) == 1
    assert c.values[c.models.index("zeta"), c.columns.index("mmlu.loss")] == VALUES[0, 1]
