"""Order invariance (issue #25) of the commands that read several inputs, as Hypothesis properties through the
CLI: ``fuse`` (the run files in any order, each file's lines shuffled; plain and learned fusion) writes the
same run, byte for byte, and reports the same learned fusion and cross-validation; ``duel tournament`` (the
submission files in any order, each task's prediction records shuffled) prints the same table and the same
duels. EEVEE's property is in tests/eevee/test_order_invariance.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelseek.testing.cli import run_cli
from modelseek.testing.fuzz import fuzz_settings

N_RUNS = 3


# ------------------------------------------------------------------------------------------ fuse
@pytest.fixture(scope="module")
def fuse_case(tmp_path_factory):
    """Three runs over the 12 topics of a generated ground truth (6 models), with distinct ranks per topic
    (so that line order is not a tie-break) and scores rounded to 2 decimals (so that sums of the same terms
    in another order differ in the last bits, and equal fused scores are common)."""
    from modelseek.testing import make_ntcir_layout

    root = tmp_path_factory.mktemp("order-fuse")
    gt = make_ntcir_layout(root / "layout", n_tasks=12, n_models=6, seed=0) / "ground-truth.csv"
    topics = sorted({ln.split(",")[0] for ln in gt.read_text().splitlines()[1:]})
    rng = np.random.default_rng(2)
    runs = []
    for r in range(N_RUNS):
        lines = []
        for t in topics + ["2001", "2002"]:  # two topics without ground truth
            docs = rng.permutation(6)[: rng.integers(3, 7)] + 1
            sc = np.sort(rng.integers(0, 8, size=len(docs)) / 8 + rng.integers(0, 3))[::-1]
            lines += [f"{t} Q0 {d} {k + 1} {s:.2f} run{r}" for k, (d, s) in enumerate(zip(docs, sc))]
        runs.append(lines)
    return {"root": root, "gt": gt, "runs": runs, "ref": {}}


PLAIN = {"rrf": (), "combsum": ("--norm", "zmuv"), "combmnz": ("--norm", "rank"), "wsum": ("--norm", "sum"),
         "rrf-weighted": (), "optimize": ("--step", "0.25", "--folds", "3")}
WEIGHTS = (0.5, 0.3, 0.2)


def _fuse(case, folder: Path, order, shuffle_seed, how: str) -> tuple[str, dict]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(shuffle_seed)
    paths = []
    for r in order:
        lines = case["runs"][r]
        if shuffle_seed is not None:
            lines = [lines[i] for i in rng.permutation(len(lines))]
        p = folder / f"r{r}.txt"
        p.write_text("\n".join(lines) + "\n")
        paths.append(p)
    out = folder / "fused.txt"
    args = list(PLAIN[how])
    if how == "optimize":
        args += ["--optimize", "-g", str(case["gt"])]
    else:
        args += ["--method", how.split("-")[0]]
    if how in ("wsum", "rrf-weighted"):
        args += ["--weights", ",".join(str(WEIGHTS[r]) for r in order)]  # the weights follow their runs
    res = run_cli("fuse", *paths, "-o", out, *args, "--json")
    assert res.code == 0, res.err
    summary = json.loads(res.out)
    for key in ("output", "inputs"):
        summary.pop(key, None)
    return out.read_text(), summary


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@fuzz_settings(12)
@given(order=st.permutations(range(N_RUNS)), seed=st.integers(0, 2**32 - 1), how=st.sampled_from(sorted(PLAIN)))
def test_fuse_gives_the_same_run_for_any_order_of_files_and_lines(fuse_case, order, seed, how):
    ref = fuse_case["ref"]
    if how not in ref:
        ref[how] = _fuse(fuse_case, fuse_case["root"] / f"ref-{how}", range(N_RUNS), None, how)
    got = _fuse(fuse_case, fuse_case["root"] / "perm", order, seed, how)
    assert got[0] == ref[how][0]            # the fused run, byte for byte (topic order and every score)
    assert got[1] == ref[how][1]            # the summary: the learned fusion, its folds and their scores


def test_rrf_of_three_runs_ties_candidates_with_the_same_ranks(tmp_path):
    """Found by the property: 1/61 + 1/62 + 1/68 added in run order differs in the last bit from the same
    terms in another order, so two candidates with the same ranks in different runs were ordered by the
    file order instead of the tie rule (natural docID order). The terms are now added smallest first."""
    ranks = {"a": (1, 2, 8), "b": (2, 8, 1)}     # the same three ranks; fillers take the other places
    paths = []
    for r in range(3):
        docs = {d: rk[r] for d, rk in ranks.items()}
        free = iter(k for k in range(1, 9) if k not in docs.values())
        docs.update({f"x{i}": next(free) for i in range(6)})
        p = tmp_path / f"r{r}.txt"
        p.write_text("".join(f"t1 Q0 {d} {k} {10 - k} run{r}\n" for d, k in sorted(docs.items(), key=lambda x: x[1])))
        paths.append(p)
    outs = []
    for perm in ([0, 1, 2], [1, 2, 0], [2, 0, 1]):
        res = run_cli("fuse", *(paths[i] for i in perm), "-o", tmp_path / "f.txt")
        assert res.code == 0, res.err
        outs.append((tmp_path / "f.txt").read_text())
    assert outs[0] == outs[1] == outs[2]
    lines = [ln.split() for ln in outs[0].splitlines()]
    i = [ln[2] for ln in lines].index("a")
    assert lines[i + 1][2] == "b" and lines[i][4] == lines[i + 1][4]  # tied, so in natural docID order


# ------------------------------------------------------------------------------------------ duel tournament
@pytest.fixture(scope="module")
def duel_case(tmp_path_factory):
    pytest.importorskip("sqlalchemy", reason="the duel storage needs SQLAlchemy: pip install 'modelseek[web]'")
    from modelseek.testing.duel import make_submission_dicts, small_config

    root = tmp_path_factory.mktemp("order-duel")
    cfg = small_config(("acc", "avg_mcauroc", "word_perplexity", "rouge_raw_r2_mid_f"))
    meta = root / "metadata.json"
    meta.write_text(json.dumps(cfg.to_dict()))
    subs = make_submission_dicts(cfg, n_models=4, n_samples=15, seed=0)
    twin = json.loads(json.dumps(subs[1]))  # the same predictions under another name: tied with model 1
    twin["metadata"]["model"] = "model-twin"
    subs.append(twin)
    return {"root": root, "meta": meta, "subs": subs, "ref": {}}


def _tournament(case, folder: Path, order, shuffle_seed, as_json: bool) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(shuffle_seed)
    paths = []
    for i in order:
        sub = json.loads(json.dumps(case["subs"][i]))
        if shuffle_seed is not None:
            for recs in sub["predictions"].values():
                recs[:] = [recs[j] for j in rng.permutation(len(recs))]
        p = folder / f"s{i}.json"
        p.write_text(json.dumps(sub))
        paths.append(p)
    res = run_cli("duel", "tournament", *paths, "--metadata", case["meta"], "--draws", "100", "--resamples", "100",
                  *(["--json"] if as_json else []))
    assert res.code == 0, res.err
    if not as_json:
        return res.out
    d = json.loads(res.out)
    d["duels"] = sorted(d["duels"], key=lambda x: (x["task"], x["a"], x["b"]))  # listed in the files' order
    return json.dumps(d, sort_keys=True)


@fuzz_settings(6)
@given(order=st.permutations(range(5)), seed=st.integers(0, 2**32 - 1), as_json=st.booleans())
def test_duel_tournament_gives_the_same_answer_for_any_order_of_submissions(duel_case, order, seed, as_json):
    ref = duel_case["ref"]
    if as_json not in ref:
        ref[as_json] = _tournament(duel_case, duel_case["root"] / f"ref-{as_json}", range(5), None, as_json)
    assert _tournament(duel_case, duel_case["root"] / "perm", order, seed, as_json) == ref[as_json]
