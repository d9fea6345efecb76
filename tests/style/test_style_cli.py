"""``modelseek rank-style`` and ``modelseek bench-style`` through the CLI."""

from __future__ import annotations

import json

import pytest

from modelseek import validate_run
from modelseek.retrieval.data.run import read_runs


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_rank_style_writes_a_valid_subtask_b_run(cli, b_layout, tmp_path):
    out = tmp_path / "run.txt"
    r = cli("rank-style", b_layout, "-o", out, "--size", 32, "-m", "texture+colour-logreg", "hist-centroid",
            "--cache", tmp_path / "cache")
    assert r.code == 0, r.err
    assert "Subtask B rules: valid" in r.out
    test_ids = [n.strip()[:-4] for n in (b_layout / "test-image-ids.txt").read_text().split()]
    runs = validate_run(out, topics=test_ids, docs=["1", "2", "3", "4"], subtask="B")
    assert set(runs) == {"texture+colour-logreg", "hist-centroid"}
    run = runs["texture+colour-logreg"]
    assert sorted(run) == sorted(test_ids) and "test-0005-0011" in run
    assert all(sorted(run.ranking(q)) == ["1", "2", "3", "4"] for q in run)
    first = (out.read_text().splitlines()[0]).split()
    assert first[0] == "test-0005-0011" and first[1] == "Q0" and first[3] == "1"


def test_rank_style_json_and_cache_reuse(cli, b_layout, tmp_path):
    args = ("rank-style", b_layout, "--size", 32, "-m", "colour-centroid", "--json", "--cache", tmp_path / "c")
    a = cli(*args)
    b = cli(*args)
    assert a.code == 0 and a.out == b.out
    data = json.loads(a.out)["colour-centroid"]
    assert len(data) == 8 and all(len(v) == 4 for v in data.values())
    assert data["test-0005-0011"][0]["model"].startswith("style ")


def test_rank_style_folder_sets(cli, b_layout, tmp_path):
    from PIL import Image

    train = tmp_path / "train"
    for lab in ("1", "2", "3", "4"):
        (train / lab).mkdir(parents=True)
    for p in sorted((b_layout / "images" / "train").glob("*.png")):
        content, model = p.stem.split("-")[1:]
        Image.open(p).save(train / str(int(model)) / f"c{content}.png")
    queries = b_layout / "images" / "test"
    out = tmp_path / "run.txt"
    r = cli("rank-style", train, "--test", queries, "-o", out, "--size", 32, "-m", "colour-knn",
            "--models", b_layout / "models.csv")
    assert r.code == 0, r.err
    (run,) = read_runs(out).values()
    assert len(run) == 8
    # without --test a folder set has no queries
    r = cli("rank-style", train, "--size", 32)
    assert r.code == 1 and "--test is needed" in r.err


def test_rank_style_bad_input_exit_1(cli, b_layout, tmp_path):
    (b_layout / "images" / "test" / "test-0005-0011.png").write_bytes(b"not a png")
    r = cli("rank-style", b_layout, "--size", 32, "-m", "hist-centroid")
    assert r.code == 1 and "test-0005-0011.png" in r.err and "cannot decode image" in r.err
    r = cli("rank-style", tmp_path / "nowhere")
    assert r.code == 1 and "no such folder" in r.err
    r = cli("rank-style", b_layout, "-m", "gram-svm")
    assert r.code == 1 and "unknown style retriever 'svm'" in r.err


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_bench_style_generated_json(cli, tmp_path):
    r = cli("bench-style", "--generated", "--styles", 20, "--seed", 0, "--json", "--contents", 4, "--size", 32,
            "--folds", 2, "-m", "hist-centroid", "texture+colour-logreg", "--plot", tmp_path / "mrr.png")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    mrr = out["mrr"]
    assert set(mrr) == {"hist-centroid", "texture+colour-logreg"}
    assert any("hist" in m for m in mrr)
    assert out["chance"]["mrr"] == pytest.approx(sum(1 / k for k in range(1, 21)) / 20)
    assert out["n_images"] == 80 and out["n_models"] == 20
    assert mrr["texture+colour-logreg"] > mrr["hist-centroid"] > out["chance"]["mrr"]
    assert (tmp_path / "mrr.png").stat().st_size > 1000


def test_bench_style_on_a_subtask_b_layout(cli, b_layout, tmp_path):
    runs = tmp_path / "cv.txt"
    r = cli("bench-style", b_layout, "--size", 32, "--folds", 2, "-m", "colour-centroid", "--run-out", runs)
    assert r.code == 0, r.err
    assert "colour-centroid" in r.out and "chance" in r.out
    (run,) = validate_run(runs, subtask="B").values()
    assert len(run) == 16  # every training image ranked once, by a model that never saw its content image


def test_bench_style_usage_errors(cli):
    r = cli("bench-style")
    assert r.code == 1 and "--generated" in r.err
    r = cli("bench-style", "--generated", "--styles", 1)  # an option value: argparse's usage error (#14)
    assert r.code == 2 and "argument --styles: must be an integer >= 2, got 1" in r.err


@pytest.mark.slow(reason="ranks the real Subtask B metadata with stand-in images")
def test_rank_style_on_the_real_subtask_b_metadata(cli, shared_b, tmp_path):
    """The real train.csv / models.csv / test-image-ids.txt with stand-in images (one solid colour per model,
    linked under every image name): a full 3,825 x 85 run that passes the Subtask B validator."""
    import csv

    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    src = tmp_path / "src"
    src.mkdir()
    for m in range(1, 86):
        Image.fromarray(np.full((8, 8, 3), rng.integers(0, 256, 3), np.uint8)).save(src / f"{m}.png")
    images = tmp_path / "images"
    (images / "train").mkdir(parents=True)
    (images / "test").mkdir(parents=True)
    with open(shared_b / "train.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            (images / "train" / row["image_id"]).symlink_to(src / f"{row['model_id']}.png")
    names = (shared_b / "test-image-ids.txt").read_text().split()
    for k, name in enumerate(names):
        (images / "test" / name).symlink_to(src / f"{k % 85 + 1}.png")
    out = tmp_path / "run.txt"
    r = cli("rank-style", shared_b, "--images", images, "--size", 8, "-m", "hist-centroid", "-o", out)
    assert r.code == 0, r.err
    runs = validate_run(out, topics=[n[:-4] for n in names], docs=[str(m) for m in range(1, 86)], subtask="B")
    run = runs["hist-centroid"]
    assert len(run) == 3825 and all(len(run[q]) == 85 for q in list(run)[:50])
    # stand-in images carry their model's colour, so the right model comes first
    assert run.ranking(names[0][:-4])[0] == "1" and run.ranking(names[1][:-4])[0] == "2"
