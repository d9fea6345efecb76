"""Issue #22: ``evaluate RUN --ground-truth train.csv`` (Subtask B truth: MRR with a bootstrap interval) and
``validate RUN --test-images DATA`` (every test image, every model)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from modelseek.style.synthetic import write_organiser_layout, write_organiser_sources


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("ev-src")
    listing, train, models = write_organiser_sources(src, n_models=4, train_contents=(1, 2, 3), test_contents=(4,))
    root = tmp_path_factory.mktemp("ev") / "repo"
    write_organiser_layout(root, listing, train, models, size=16, render=16, grain=0)
    return root


def _run(path: Path, rankings: dict[str, list[str]], run_id: str = "r") -> Path:
    lines = [f"{q} Q0 {d} {k} {10 - k} {run_id}" for q, ds in rankings.items() for k, d in enumerate(ds, start=1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_mrr_known_value_and_missing_images(cli, tmp_path):
    truth = tmp_path / "truth.csv"
    truth.write_text("image_id,model_id\na.png,1\nb.png,2\nc.png,0003\nd.png,4\n")
    # true model at rank 1, 2 and 4; d is not in the run (reciprocal rank 0, reported as missing)
    run = _run(tmp_path / "run.txt", {"a": ["1", "2", "3", "4"], "b": ["1", "2", "3", "4"], "c": ["1", "2", "4", "3"]})
    r = cli("evaluate", run, "--ground-truth", truth, "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)["r"]
    assert out["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 4 + 0) / 4)
    assert out["queries"] == 4 and out["missing"] == 1
    low, high = out["mrr_interval"]
    assert 0 <= low <= out["mrr"] <= high <= 1
    r = cli("evaluate", run, "--ground-truth", truth)
    assert r.code == 0 and "Subtask B: MRR over the 4 images" in r.out and "0.4375" in r.out


def test_cross_fitted_runs_score_against_train_csv_as_bench_style_reports(cli, repo, tmp_path):
    runs = tmp_path / "cv.txt"
    r = cli("bench-style", repo, "--folds", 3, "--size", 16, "-m", "hist-centroid", "colour-centroid", "--json",
            "--run-out", runs)
    assert r.code == 0, r.err
    bench = json.loads(r.out)["mrr"]
    r = cli("evaluate", runs, "--ground-truth", repo / "data" / "train.csv", "--json")
    assert r.code == 0, r.err
    ev = json.loads(r.out)
    for m in ("hist-centroid", "colour-centroid"):
        assert ev[m]["mrr"] == pytest.approx(bench[m]) and ev[m]["missing"] == 0 and ev[m]["queries"] == 12


def test_evaluate_subtask_b_errors(cli, repo, tmp_path):
    run = _run(tmp_path / "run.txt", {"test-0004-0001": ["1", "2", "3", "4"]})
    r = cli("evaluate", run, "--ground-truth", repo / "data" / "train.csv")
    assert r.code == 1 and "shares no image with the ground truth" in r.err and str(run) in r.err
    truth = tmp_path / "t.csv"
    truth.write_text("image_id,model_id\nx.png,1\nx,2\n")
    r = cli("evaluate", run, "--ground-truth", truth)
    assert r.code == 1 and r.err.startswith(f"error: {truth}:3: field 'image_id': image 'x' is listed twice"), r.err


def test_validate_against_the_test_folder(cli, repo, tmp_path):
    out = tmp_path / "run.txt"
    assert cli("rank-style", repo, "-o", out, "--size", 16, "-m", "hist-centroid").code == 0
    for where in (repo, repo / "data", repo / "data" / "test"):
        r = cli("validate", out, "--test-images", where)
        assert r.code == 0 and "each ranking the 4 models for all 4 test images" in r.out, r.err
    # a test image the run does not rank, and a run that leaves out a model
    extra = repo.parent / "repo2"
    shutil.copytree(repo, extra)
    shutil.copy(next((extra / "data" / "test").glob("*.png")), extra / "data" / "test" / "test-0004-9999.png")
    r = cli("validate", out, "--test-images", extra)
    assert r.code == 1 and "test-0004-9999" in r.err and str(out) in r.err, r.err
    lines = [ln for ln in out.read_text().splitlines() if ln.split()[2] != "3"]
    short = tmp_path / "short.txt"
    short.write_text("\n".join(lines) + "\n")
    r = cli("validate", short, "--test-images", repo)
    assert r.code == 1 and "ranks 3 of 4 candidates; missing 3" in r.err and str(short) in r.err, r.err
    r = cli("validate", out, "--test-images", tmp_path / "nowhere")
    assert r.code == 1 and "no such folder" in r.err
