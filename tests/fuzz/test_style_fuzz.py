"""Property-based fuzzing of ``modelseek rank-style`` and ``bench-style`` (issue #14): the files of a Subtask B
layout (train.csv, models.csv, test-image-ids.txt), the image files themselves, the folder-per-label layout
with an image list and a models.csv, and every numeric option. Each run ends in exit 0 with a valid run,
exit 1 with located error lines naming the damaged file, or a usage error — never a traceback.

Images are 32x32 and the method is a colour histogram at 16x16, so one example costs a fraction of a second;
examples are bounded and derandomised.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelseek.testing.cli import run_cli
from modelseek.testing.fuzz import NASTY_NUMBERS, assert_clean_exit, damaged, fuzz_settings
from modelseek.testing.style import make_b_layout

FUZZ = fuzz_settings(50)
FEW = fuzz_settings(15)
FAST = ("--size", "16", "-m", "hist-centroid")
OPTION_VALUES = st.one_of(st.integers(-3, 6).map(str), st.sampled_from(NASTY_NUMBERS + ("2.5", "1e3", "-0.0", "4294967296")))


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    root = tmp_path_factory.mktemp("stylefuzz")
    b = make_b_layout(root / "b", n_models=3, n_train_content=3, n_test_content=1)
    folders = root / "folders"
    for i, p in enumerate(sorted((b / "images" / "train").glob("*.png"))):
        label = str(1 + i % 3)
        (folders / label).mkdir(parents=True, exist_ok=True)
        shutil.copy(p, folders / label / f"c{i // 3}.png")
    queries = root / "queries"
    queries.mkdir()
    for p in sorted((b / "images" / "test").glob("*.png")):
        shutil.copy(p, queries / p.name)
    (root / "query-list.txt").write_text("".join(p.name + "\n" for p in sorted(queries.glob("*.png"))))
    shutil.copy(b / "models.csv", root / "models.csv")
    return {"root": root, "b": b, "folders": folders, "queries": queries, "list": root / "query-list.txt",
            "models": root / "models.csv"}


def _fresh_b(layout) -> Path:
    dst = layout["root"] / "victims" / "b"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(layout["b"], dst)
    return dst


def _valid_run(path: Path, n_queries: int, n_models: int) -> None:
    from modelseek.retrieval.data.run import read_run

    run = read_run(path)
    assert len(run) == n_queries
    for q in run:
        assert len(run[q]) == n_models and all(math.isfinite(e.score) for e in run[q])


# ------------------------------------------------------------------------------------------ Subtask B files
@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), name=st.sampled_from(["train.csv", "models.csv", "test-image-ids.txt"]))
def test_rank_style_survives_a_damaged_layout_file(layout, data, name):
    b = _fresh_b(layout)
    path = b / name
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    out = b.parent / "run.txt"
    out.unlink(missing_ok=True)
    r = run_cli("rank-style", b, *FAST, "-o", out, "--json")
    # an error may name the other file of the layout (a label of train.csv missing from models.csv)
    assert_clean_exit(r, *(b / n for n in ("train.csv", "models.csv", "test-image-ids.txt", "images")))
    if r.code == 0:
        from modelseek.style.data import load_models, read_image_list

        _valid_run(out, len(read_image_list(b / "test-image-ids.txt")), len(load_models(b / "models.csv")))


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FEW
@given(data=st.data(), split=st.sampled_from(["train", "test"]), victim=st.integers(0, 2),
       how=st.sampled_from(["bytes", "bytes", "dir", "empty", "text"]))
def test_rank_style_survives_a_damaged_image(layout, data, split, victim, how):
    b = _fresh_b(layout)
    path = sorted((b / "images" / split).glob("*.png"))[victim]
    if how == "dir":
        path.unlink()
        path.mkdir()
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "text":
        path.write_text("not an image\n")
    else:
        path.write_bytes(data.draw(damaged(path.read_bytes(), max_damages=2)))
    r = run_cli("rank-style", b, *FAST, "--json")
    assert_clean_exit(r, path, b / "images")  # a folder in place of the image: the image is missing


# ------------------------------------------------------------------------------------------ folder layout
@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=st.sampled_from(["list", "models"]))
def test_rank_style_survives_a_damaged_list_or_models_csv(layout, data, which):
    dst = layout["root"] / "victims" / layout[which].name
    dst.parent.mkdir(exist_ok=True)
    dst.write_bytes(data.draw(damaged(layout[which].read_bytes())))
    test = shutil.copy(layout["list"], layout["queries"] / "list.txt") if which == "models" else \
        shutil.copy(dst, layout["queries"] / "list.txt")
    models = dst if which == "models" else layout["models"]
    r = run_cli("rank-style", layout["folders"], "--test", test, "--models", models, *FAST, "--json")
    assert_clean_exit(r, test, models, layout["queries"])
    if r.code == 0:  # every query ranks every candidate of the (possibly damaged, still valid) models.csv
        from modelseek.style.data import load_models

        n = len(load_models(models))
        runs = json.loads(r.out)
        assert all(len(ranked) == min(n, 10) for run in runs.values() for ranked in run.values())


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FEW
@given(data=st.data())
def test_bench_style_survives_a_damaged_layout(layout, data):
    b = _fresh_b(layout)
    path = b / data.draw(st.sampled_from(["train.csv", "models.csv"]))
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    r = run_cli("bench-style", b, "--folds", "2", *FAST, "--json")
    assert_clean_exit(r, *(b / n for n in ("train.csv", "models.csv", "images")))
    if r.code == 0:
        d = json.loads(r.out)
        assert all(0 <= v <= 1 for v in d["mrr"].values()), d


# ------------------------------------------------------------------------------------------ options
@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
@FUZZ
@given(option=st.sampled_from(["--size", "--seed", "--show"]), value=OPTION_VALUES)
def test_rank_style_numeric_options(layout, option, value):
    args = {"--size": "16", "-m": "hist-centroid"}
    args[option] = value
    r = run_cli("rank-style", layout["b"], *(x for kv in args.items() for x in kv), "--json")
    assert_clean_exit(r)
    if r.code == 0:
        assert all(len(v) == 3 for run in json.loads(r.out).values() for v in run.values())


@pytest.mark.slow(reason="8 s (setup and call) on 2 busy cores")
@FUZZ
@given(option=st.sampled_from(["--styles", "--contents", "--folds", "--size", "--seed"]), value=OPTION_VALUES)
def test_bench_style_generated_numeric_options(option, value):
    args = {"--styles": "3", "--contents": "3", "--folds": "2", "--size": "16", "-m": "hist-centroid"}
    args[option] = value
    r = run_cli("bench-style", "--generated", *(x for kv in args.items() for x in kv), "--json")
    assert_clean_exit(r)
    if r.code == 0:
        d = json.loads(r.out)
        assert all(0 <= v <= 1 and math.isfinite(v) for v in d["mrr"].values()), d


@pytest.mark.parametrize("role", ["train", "test", "models", "images", "cache"])
@pytest.mark.parametrize("what", ["file", "missing", "empty-dir"])
def test_wrong_kind_of_path(layout, tmp_path, role, what):
    target = tmp_path / "x"
    if what == "file":
        target.write_text("x\n")
    elif what == "empty-dir":
        target.mkdir()
    args = {"train": layout["b"], "--test": None, "--models": None, "--images": None, "--cache": None}
    args["train" if role == "train" else f"--{role}"] = target
    if role == "models":
        args["train"] = layout["folders"]
        args["--test"] = layout["queries"]
    flat = [args.pop("train")] + [x for k, v in args.items() if v is not None for x in (k, v)]
    r = run_cli("rank-style", *flat, *FAST, "--json")
    assert_clean_exit(r, target)


# ------------------------------------------------------------------------------------------ regressions found here
def test_regression_cache_that_is_a_file_is_a_usage_error(layout, tmp_path):
    """Was a NotADirectoryError traceback from the feature cache."""
    f = tmp_path / "cache"
    f.write_text("x")
    r = run_cli("rank-style", layout["b"], *FAST, "--cache", f)
    assert r.code == 2 and f"argument --cache: {f}: is a file, expected a folder" in r.err


def test_regression_missing_image_names_the_list_and_line(layout, tmp_path):
    """A name in --test's list (or train.csv) without an image used to name only the guessed image path."""
    lst = tmp_path / "ids.txt"
    lst.write_text("test-0004-0011.png\n\nnope.png\n")
    r = run_cli("rank-style", layout["b"], *FAST, "--test", lst)
    assert r.code == 1 and r.err.startswith(f"error: {lst}:3: image 'nope.png' not found in "), r.err
    b = _fresh_b(layout)
    lines = (b / "train.csv").read_text().splitlines()
    lines[2] = lines[2].replace("train-0001-0002.png", "gone.png")
    (b / "train.csv").write_text("\n".join(lines) + "\n")
    r = run_cli("rank-style", b, *FAST)
    assert r.code == 1 and r.err.startswith(f"error: {b / 'train.csv'}:3: field 'image_id': image 'gone.png'"), r.err


def test_regression_too_few_content_images_or_models_name_the_training_file(layout):
    """'folds must be between 2 and the number of content groups' and 'need training images of at least 2
    models' used to name no file (and came after every feature was computed)."""
    b = _fresh_b(layout)
    train = b / "train.csv"
    rows = train.read_text().splitlines()
    train.write_text("\n".join(rows[:4]) + "\n")  # content image 1 only
    r = run_cli("bench-style", b, "--folds", "2", *FAST)
    assert r.code == 1 and r.err.startswith(f"error: {train}: field 'folds': folds must be between 2 and the number "
                                            f"of content groups (1), got 2"), r.err
    train.write_text("\n".join(rows[:2]) + "\n")  # one model
    for cmd in (("rank-style", b), ("bench-style", b, "--folds", "2")):
        r = run_cli(*cmd, *FAST)
        assert r.code == 1 and r.err.startswith(f"error: {train}: need ") and "at least 2 models, got 1" in r.err, r.err


def test_generated_benchmark_too_large_for_memory_is_refused():
    """Found by the exploring fuzz run: --contents 4294967296 started rendering billions of images in memory."""
    r = run_cli("bench-style", "--generated", "--styles", "3", "--contents", "2147483647", "--size", "16")
    assert r.code == 1 and "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert "field 'contents'" in r.err and "GiB of images in memory" in r.err
    r = run_cli("bench-style", "--generated", "--size", "5000")
    assert r.code == 2 and "must be an integer <= 4,096" in r.err


def test_image_list_with_a_name_too_long_for_the_file_system(layout, tmp_path):
    """Found by the exploring fuzz run (seed 4): an OSError (File name too long) traceback."""
    queries = tmp_path / "queries.txt"
    queries.write_text("test" + "9" * 400 + "-0011.png\n")
    r = run_cli("rank-style", layout["b"], "--test", queries, "--size", "16", "-m", "hist-centroid")
    assert r.code == 1 and "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert r.err.startswith(f"error: {queries}:1: image name 'test999") and "is no usable file name" in r.err


# ------------------------------------------------------------------------------------------ organisers' layout
@pytest.fixture(scope="module")
def organisers(tmp_path_factory):
    from modelseek.style.synthetic import write_organiser_layout, write_organiser_sources

    src = tmp_path_factory.mktemp("orgfuzz-src")
    listing, train, models = write_organiser_sources(src, n_models=3, train_contents=(1, 2, 3), test_contents=(4,))
    root = tmp_path_factory.mktemp("orgfuzz") / "repo"
    write_organiser_layout(root, listing, train, models, size=16, render=16, grain=0)
    return root


def _fresh_org(organisers) -> Path:
    dst = organisers.parent / "victim"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(organisers, dst)
    return dst


@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), name=st.sampled_from(["train.csv", "models.csv"]))
def test_rank_style_survives_a_damaged_organisers_csv(organisers, data, name):
    """Issue #22: the organisers' layout (data/train.csv, data/models.csv, data/train/NNNN/, data/test/)."""
    repo = _fresh_org(organisers)
    path = repo / "data" / name
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    out = repo.parent / "org-run.txt"
    out.unlink(missing_ok=True)
    r = run_cli("rank-style", repo, *FAST, "-o", out, "--json")
    assert_clean_exit(r, *(repo / "data" / n for n in ("train.csv", "models.csv", "train", "test")))
    if r.code == 0:
        from modelseek.style.data import load_models

        _valid_run(out, len(list((repo / "data" / "test").glob("*.png"))), len(load_models(repo / "data" / "models.csv")))
    else:
        assert not out.exists()


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FEW
@given(data=st.data(), split=st.sampled_from(["train", "test"]), victim=st.integers(0, 2),
       how=st.sampled_from(["bytes", "bytes", "truncate", "move", "dir", "empty"]))
def test_rank_style_survives_a_damaged_organisers_image(organisers, data, split, victim, how):
    repo = _fresh_org(organisers)
    path = sorted((repo / "data" / split).rglob("*.png"))[victim]
    named = [path, repo / "data" / "train.csv", repo / "data" / "test"]
    if how == "move" and split == "train":  # into another model's folder
        other = next(d for d in sorted((repo / "data" / "train").iterdir()) if d != path.parent)
        path.rename(other / path.name)
    elif how == "dir":
        path.unlink()
        path.mkdir()
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "truncate":
        path.write_bytes(path.read_bytes()[: data.draw(st.integers(0, path.stat().st_size - 1))])
    else:
        path.write_bytes(data.draw(damaged(path.read_bytes(), max_damages=2)))
    out = repo.parent / "org-run.txt"
    out.unlink(missing_ok=True)
    r = run_cli("rank-style", repo, *FAST, "-o", out, "--json")
    assert_clean_exit(r, *named)
    assert r.code == 0 or not out.exists()
