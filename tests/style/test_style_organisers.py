"""Issue #22: ``rank-style`` and ``bench-style`` on the organisers' Subtask B layout as cloned
(data/train.csv, data/models.csv, data/train/NNNN/*.png, data/test/*.png), and every malformed input of that
layout as one located line with nothing written."""

from __future__ import annotations

import csv
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from modelseek import validate_run
from modelseek.testing.cli import message_lines
from modelseek.style.images import decode
from modelseek.style.layout import load_organiser_train, organiser_root
from modelseek.style.synthetic import write_organiser_layout, write_organiser_sources

FAST = ("--size", "16", "-m", "hist-centroid")


@pytest.fixture(scope="module")
def organisers(tmp_path_factory) -> Path:
    """A cloned repository in miniature: ROOT/data/{train.csv, models.csv, train/NNNN/, test/}."""
    src = tmp_path_factory.mktemp("org-src")
    listing, train, models = write_organiser_sources(src, n_models=4, train_contents=(1, 2, 3, 4),
                                                     test_contents=(7, 9))
    root = tmp_path_factory.mktemp("org") / "repo"
    write_organiser_layout(root, listing, train, models, size=32, render=32, grain=0)
    return root


@pytest.fixture
def repo(organisers, tmp_path) -> Path:
    dst = tmp_path / "repo"
    shutil.copytree(organisers, dst)
    return dst


def _test_ids(data: Path) -> list[str]:
    return sorted(p.name[:-4] for p in (data / "test").glob("*.png"))


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
def test_rank_style_reads_the_layout_as_cloned(cli, organisers, tmp_path):
    data = organisers / "data"
    out_root, out_data = tmp_path / "root.txt", tmp_path / "data.txt"
    r = cli("rank-style", organisers, "-o", out_root)  # the repository root, no other option
    assert r.code == 0, r.err
    assert "wrote 1 run(s) of 8 queries x 4 models" in r.out and "Subtask B rules: valid" in r.out
    r = cli("rank-style", data, "-o", out_data, "--json")  # the data/ folder
    assert r.code == 0, r.err
    assert out_root.read_text() == out_data.read_text()
    runs = validate_run(out_root, topics=_test_ids(data), docs=["1", "2", "3", "4"], subtask="B")
    (run,) = runs.values()
    assert sorted(run) == _test_ids(data)  # topicIDs: the test file names without .png
    assert all(q.startswith("test-000") and not q.endswith(".png") for q in run)
    # the drawn styles are told apart: most test images get their hidden model at rank 1
    truth = {r["image_id"][:-4]: r["model_id"] for r in csv.DictReader(open(organisers / "test-truth.csv"))}
    top1 = np.mean([run.ranking(q)[0] == truth[q] for q in run])
    assert top1 >= 0.75, top1


def test_labels_and_content_groups_come_from_train_csv(repo):
    data = repo / "data"
    rows = list(csv.DictReader(open(data / "train.csv")))
    rows[0]["content_image_id"] = "77"  # a content id that no file name carries
    with open(data / "train.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    ds = load_organiser_train(organiser_root(repo))
    assert ds.groups[0] == "77" and ds.groups[1:] == [r["content_image_id"] for r in rows[1:]]
    assert ds.labels == [r["model_id"] for r in rows]
    assert ds.paths[0] == data / "train" / "0001" / rows[0]["image_id"]


def test_bench_style_on_the_layout_groups_by_content_image(cli, organisers, tmp_path):
    runs = tmp_path / "cv.txt"
    r = cli("bench-style", organisers, "--folds", 2, "--run-out", runs, *FAST, "--json")
    assert r.code == 0, r.err
    (run,) = validate_run(runs, subtask="B").values()
    assert len(run) == 16  # every training image ranked once, by a model that never saw its content image
    import json

    out = json.loads(r.out)
    assert out["n_images"] == 16 and out["n_models"] == 4 and 0 < out["mrr"]["hist-centroid"] <= 1


@pytest.mark.slow(reason="builds the organisers' listing with stand-in images")
def test_a_subset_of_the_organisers_listing(cli, shared_b, tmp_path):
    """The organisers' own listing and CSVs (10 of the 85 models, 2 of the 45 test contents, 16 px): the
    files land where image-files.txt puts them and rank-style writes a valid run of every test file."""
    root = tmp_path / "repo"
    data = write_organiser_layout(root, shared_b / "image-files.txt", shared_b / "train.csv",
                                  shared_b / "models.csv", size=16, render=16, grain=0, models=range(1, 11),
                                  test_contents=2)
    listed = {ln.strip() for ln in (shared_b / "image-files.txt").read_text().splitlines()}
    written = {str(p.relative_to(root)) for p in data.rglob("*.png")}
    assert written <= listed and len(written) == 440 + 170
    out = tmp_path / "run.txt"
    r = cli("rank-style", root, "-o", out, *FAST)
    assert r.code == 0, r.err
    (run,) = validate_run(out, topics=_test_ids(data), docs=[str(m) for m in range(1, 11)], subtask="B").values()
    assert len(run) == 170 and {"test-0001-0011", "test-0003-0001"} & set(run)


# ------------------------------------------------------------------------------------------ malformed input
def _fails(cli, repo, tmp_path, *names) -> str:
    out = tmp_path / "run.txt"
    r = cli("rank-style", repo, "-o", out, *FAST)
    assert r.code == 1, (r.code, r.out, r.err)
    lines = message_lines(r.err)  # progress lines aside
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.err, r.err
    assert all(n in lines[0] for n in names), lines[0]
    assert not out.exists()  # nothing half-written
    return lines[0]


def _line(repo: Path, name: str) -> int:
    lines = (repo / "data" / "train.csv").read_text().splitlines()
    return next(k for k, ln in enumerate(lines, start=1) if ln.startswith(name + ","))


def test_missing_training_image(cli, repo, tmp_path):
    (repo / "data" / "train" / "0002" / "train-0003-0002.png").unlink()
    line = _fails(cli, repo, tmp_path, str(repo / "data" / "train.csv"))
    assert f":{_line(repo, 'train-0003-0002.png')}: field 'image_id': image 'train-0003-0002.png' not found in " in line
    assert line.endswith(str(repo / "data" / "train" / "0002"))


def test_image_in_the_wrong_model_folder(cli, repo, tmp_path):
    train = repo / "data" / "train"
    (train / "0002" / "train-0003-0002.png").rename(train / "0004" / "train-0003-0002.png")
    line = _fails(cli, repo, tmp_path, str(repo / "data" / "train.csv"))
    assert f":{_line(repo, 'train-0003-0002.png')}: field 'model_id': image 'train-0003-0002.png' is in train/0004, but train.csv gives it model 2 " \
           "(expected in train/0002/)" in line


@pytest.mark.parametrize("intruder", ["notes.txt", "sub"])
def test_test_folder_holding_a_non_image(cli, repo, tmp_path, intruder):
    p = repo / "data" / "test" / intruder
    if intruder == "sub":
        p.mkdir()
    else:
        p.write_text("not an image\n")
    line = _fails(cli, repo, tmp_path, str(p))
    assert ("not an image file (.txt)" in line) if intruder != "sub" else ("a folder inside the test folder" in line)
    # hidden files (.gitkeep, .DS_Store) are not queries and not errors
    p.rename(repo / "data" / "test" / ".hidden") if intruder != "sub" else p.rmdir()
    assert cli("rank-style", repo, *FAST).code == 0


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_a_png_name_that_holds_no_image(cli, repo, tmp_path):
    p = sorted((repo / "data" / "test").glob("*.png"))[3]
    p.write_text("<html>Git LFS pointer or error page</html>\n")
    line = _fails(cli, repo, tmp_path, str(p))
    assert "not an image file" in line


@pytest.mark.parametrize("split", ["train", "test"])
def test_truncated_png(cli, repo, tmp_path, split):
    p = sorted((repo / "data" / split).rglob("*.png"))[5]
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    line = _fails(cli, repo, tmp_path, str(p))
    assert "cannot decode image" in line and "truncated" in line


def test_decompression_bomb(cli, repo, tmp_path):
    """A 20,000 x 20,000 PNG of a few hundred bytes: refused from its header, before inflating anything."""
    p = sorted((repo / "data" / "test").glob("*.png"))[0]

    def chunk(tag, body):
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)

    body = zlib.compress(b"\x00" * 20_000 * 64)  # the first rows only; a bomb needs no more to be a threat
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 20_000, 20_000, 8, 2, 0, 0, 0))
                  + chunk(b"IDAT", body) + chunk(b"IEND", b""))
    line = _fails(cli, repo, tmp_path, str(p))
    assert "decompression bomb" in line


def _variant(img: np.ndarray, kind: str, path: Path) -> None:
    if kind == "rgba":
        a = np.dstack([img, np.full(img.shape[:2], 255, np.uint8)])
        a[:4, :4, 3] = 0  # transparent corner: alpha is dropped, as the organisers' convert("RGB") does
        Image.fromarray(a, "RGBA").save(path)
    elif kind == "palette":
        Image.fromarray(img).quantize(64, dither=Image.Dither.NONE).save(path)
    elif kind == "grey16":
        g = img.mean(axis=2).round().astype(np.uint16) * 257
        Image.fromarray(g).save(path)  # 16-bit grey PNG (mode I;16)
    elif kind == "rgb16":
        raw = (img.astype(">u2") * 257).tobytes()
        h, w = img.shape[:2]
        rows = b"".join(b"\x00" + raw[y * w * 6:(y + 1) * w * 6] for y in range(h))

        def chunk(tag, body):
            return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)

        path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0))
                         + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


@pytest.mark.parametrize("kind", ["rgba", "palette", "grey16", "rgb16"])
def test_other_png_modes_are_read_as_rgb(cli, repo, tmp_path, kind):
    p = sorted((repo / "data" / "test").glob("*.png"))[2]
    img = np.asarray(Image.open(p).convert("RGB"))
    _variant(img, kind, p)
    with Image.open(p) as im:
        assert im.mode == {"rgba": "RGBA", "palette": "P", "grey16": "I;16", "rgb16": "RGB"}[kind]
    got = decode(p)
    assert got.shape == img.shape and got.dtype == np.uint8
    if kind in ("rgba", "rgb16"):
        assert np.array_equal(got, img)  # alpha dropped; 16-bit samples read at 8 bits
    elif kind == "grey16":
        assert np.array_equal(got[..., 0], img.mean(axis=2).round().astype(np.uint8))  # not clipped to white
        assert np.array_equal(got[..., 0], got[..., 2])
    else:
        assert np.abs(got.astype(int) - img).mean() < 12  # through the palette
    out = tmp_path / "run.txt"
    r = cli("rank-style", repo, "-o", out, *FAST)
    assert r.code == 0, r.err
    assert len(validate_run(out, topics=_test_ids(repo / "data"), subtask="B")["hist-centroid"]) == 8


def test_an_unread_mode_is_refused(cli, repo, tmp_path):
    p = sorted((repo / "data" / "test").glob("*.png"))[1]
    p.unlink()
    p = p.with_suffix(".tif")
    Image.fromarray(np.zeros((16, 16), np.float32), "F").save(p)
    line = _fails(cli, repo, tmp_path, str(p))
    assert "image mode 'F' is not read" in line


@pytest.mark.slow(reason="3,825 queries x 85 models from the full listing")
def test_the_full_listing_gives_a_run_of_3825_queries_by_85_models(cli, shared_b, tmp_path):
    """Every file of the organisers' image-files.txt (train/NNNN/ and test/), their train.csv and models.csv:
    stand-in pixels (one small PNG per model, linked under each of its file names; test files linked to a
    seeded model), rank-style DATA -o run.txt with no other option than the method and size."""
    from modelseek.style.synthetic import parse_listing

    rng = np.random.default_rng(0)
    src = tmp_path / "src"
    src.mkdir()
    for m in range(1, 86):
        Image.fromarray(np.full((8, 8, 3), rng.integers(0, 256, 3), np.uint8)).save(src / f"{m}.png")
    data = tmp_path / "repo" / "data"
    train, test = parse_listing((shared_b / "image-files.txt").read_text().splitlines())
    hidden = {}
    for path, _, model in train:
        (data / path[5:]).parent.mkdir(parents=True, exist_ok=True)
        (data / path[5:]).symlink_to(src / f"{model}.png")
    for k, (path, _) in enumerate(test):
        (data / path[5:]).parent.mkdir(parents=True, exist_ok=True)
        hidden[Path(path).stem] = str(k % 85 + 1)
        (data / path[5:]).symlink_to(src / f"{hidden[Path(path).stem]}.png")
    shutil.copy(shared_b / "train.csv", data / "train.csv")
    shutil.copy(shared_b / "models.csv", data / "models.csv")
    out = tmp_path / "run.txt"
    r = cli("rank-style", data, "-o", out, "--size", 8, "-m", "hist-centroid")
    assert r.code == 0, r.err
    assert "wrote 1 run(s) of 3825 queries x 85 models" in r.out
    names = (shared_b / "test-image-ids.txt").read_text().split()
    (run,) = validate_run(out, topics=[n[:-4] for n in names], docs=[str(m) for m in range(1, 86)],
                          subtask="B").values()
    assert len(run) == 3825 and all(len(run[q]) == 85 for q in list(run)[::97])
    assert all(run.ranking(q)[0] == hidden[q] for q in list(run)[::50])  # each stand-in model's colour is its own


def test_a_list_of_test_names_is_looked_up_in_the_test_folder(cli, organisers, tmp_path):
    names = sorted(p.name for p in (organisers / "data" / "test").glob("*.png"))[:3]
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(names) + "\n")
    out = tmp_path / "run.txt"
    r = cli("rank-style", organisers, "--test", ids, "-o", out, *FAST)
    assert r.code == 0, r.err
    assert sorted(validate_run(out, topics=[n[:-4] for n in names], subtask="B")["hist-centroid"]) == \
        [n[:-4] for n in names]
    ids.write_text("\n".join(names) + "\nnope.png\n")
    r = cli("rank-style", organisers, "--test", ids, *FAST)
    assert r.code == 1 and r.err.startswith(f"error: {ids}:4: image 'nope.png' not found in "
                                            f"{organisers / 'data' / 'test'}"), r.err


def test_a_missing_models_csv_is_named_as_such(cli, repo, tmp_path):
    """Issue #34: the organisers' layout without data/models.csv is named, not mistaken for another layout."""
    from modelseek.testing.cli import assert_one_error_line

    (repo / "data" / "models.csv").unlink()
    for args in (("rank-style", repo, "-o", tmp_path / "r.txt"), ("bench-style", repo, "--folds", 2, *FAST)):
        assert_one_error_line(cli(*args), "models.csv", "missing")
    assert not (tmp_path / "r.txt").exists()


def test_image_ids_with_or_without_png(cli, repo, organisers, tmp_path):
    """Issue #34: train.csv's image_id read with or without the file's .png: the same training set."""
    data = repo / "data"
    rows = list(csv.DictReader(open(data / "train.csv")))
    for r in rows[::2]:
        r["image_id"] = r["image_id"][:-4]
    with open(data / "train.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with_png = load_organiser_train(organiser_root(organisers))
    mixed = load_organiser_train(organiser_root(repo))
    assert mixed.ids == with_png.ids and [p.name for p in mixed.paths] == [p.name for p in with_png.paths]
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    assert cli("rank-style", organisers, "-o", a, *FAST[:2]).code == 0
    assert cli("rank-style", repo, "-o", b, *FAST[:2]).code == 0
    assert a.read_text() == b.read_text()


def test_validate_official_on_a_subtask_b_root(cli, organisers, tmp_path):
    """Issue #34: validate --official ROOT on the Subtask B layout checks every test image x every model."""
    out = tmp_path / "run.txt"
    assert cli("rank-style", organisers, "-o", out, *FAST).code == 0
    r = cli("validate", out, "--official", organisers)
    assert r.code == 0 and "each ranking the 4 models for all 8 test images" in r.out, r.err
    lines = out.read_text().splitlines()
    (tmp_path / "short.txt").write_text("\n".join(lines[4:]) + "\n")  # the first image dropped
    r = cli("validate", tmp_path / "short.txt", "--official", organisers)
    assert r.code == 1 and "misses 1 topic(s)" in r.err


def test_validate_subtask_b_refuses_a_subtask_a_run(cli, tmp_path):
    """Issue #36: a Subtask A run given to --subtask B is named, not 'ok'."""
    lines = [f"{t} Q0 {d} {d} {21 - d} run" for t in (1, 2) for d in range(1, 21)]
    (tmp_path / "a.txt").write_text("\n".join(lines) + "\n")
    r = cli("validate", tmp_path / "a.txt", "--subtask", "B")
    assert r.code == 1 and "looks like a Subtask A run" in r.err
    assert cli("validate", tmp_path / "a.txt").code == 0
