"""Property-based fuzzing of ``modelseek align`` (issue #14): every file it reads (registry, catalog,
submissions in the draft and the live form, CKA matrices as .npz and CSV, the embeddings folder of
``align embed -o``, the image files behind a catalog) is damaged at random, and every numeric option is
tried with out-of-range values. Each run ends in exit 0 with a valid result, exit 1 with located error
lines naming the damaged file, or a usage error — never a traceback.

The models are two tiny random CNNs on eight 40x48 images, so a forward pass costs milliseconds; examples
are bounded and derandomised.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelseek.testing.cli import run_cli
from modelseek.testing.fuzz import NASTY_NUMBERS, assert_clean_exit, damaged, fuzz_settings

pytest.importorskip("torch")

FUZZ = fuzz_settings(50)
FEW = fuzz_settings(15)

#: Values for a numeric option: in range, out of range, non-finite, not numbers.
OPTION_VALUES = st.one_of(st.integers(-3, 12).map(str), st.sampled_from(NASTY_NUMBERS + ("2.5", "1e3", "-0.0", "4294967296")))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from modelseek.align.testing import custom_entry, make_images

    root = tmp_path_factory.mktemp("alignfuzz")
    images = make_images(root / "synth", 8, seed=3)
    reg = root / "registry.json"
    reg.write_text(json.dumps([custom_entry("cnn0", seed=0), custom_entry("cnn1", seed=1),
                               custom_entry("cnn2", seed=2, layer="features.0")], indent=1))
    cat = root / "catalog.jsonl"
    cat.write_text("".join(json.dumps({"dataset_name": "synth", "image_identifier": p.name}) + "\n" for p in images))
    stim = [{"dataset_name": "synth", "image_identifier": p.name} for p in images[:4]]
    subs = {
        "blue-draft": {"team": "blue", "models": ["cnn0", "cnn1"]},
        "blue-live": {"models": [{"model_name": "cnn0", "layer_name": "features.3"}, {"model_name": "cnn2"}]},
        "red-draft": {"team": "red", "stimuli": stim},
        "red-live": {"differentiating_images": stim},
    }
    for name, doc in subs.items():
        (root / f"{name}.json").write_text(json.dumps(doc, indent=1))
    rng = np.random.default_rng(0)
    C = rng.uniform(0.2, 0.9, (5, 5))
    C = (C + C.T) / 2
    np.fill_diagonal(C, 1.0)
    names = [f"net{i}" for i in range(5)]
    np.savez(root / "M.npz", names=np.array(names), matrix=C, layers=np.array(["features.3"] * 5))
    (root / "M.csv").write_text("model," + ",".join(names) + "\n" + "".join(
        names[i] + "," + ",".join(f"{x:.10f}" for x in C[i]) + "\n" for i in range(5)))
    cache = root / "cache"
    common = ("--registry", reg, "--catalog", cat, "--dataset-root", f"synth={root / 'synth'}", "--cache-dir", cache)
    emb = root / "emb"
    r = run_cli("align", "embed", "-o", emb, *common, "--json")
    assert r.code == 0, r.err
    return {"root": root, "registry": reg, "catalog": cat, "images": root / "synth", "common": common,
            "matrix_npz": root / "M.npz", "matrix_csv": root / "M.csv", "emb": emb,
            **{k: root / f"{k}.json" for k in subs}}


def _victim(setup, key: str, name: str | None = None) -> tuple[Path, bytes]:
    src = setup[key]
    dst = setup["root"] / "victims" / (name or src.name)
    dst.parent.mkdir(exist_ok=True)
    return dst, src.read_bytes()


SUBMISSIONS = st.sampled_from(["blue-draft", "blue-live", "red-draft", "red-live"])


# ------------------------------------------------------------------------------------------ submissions
@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=SUBMISSIONS)
def test_validate_survives_a_damaged_submission(setup, data, which):
    path, valid = _victim(setup, which)
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("align", "validate", path, *setup["common"][:6], "--json")
    assert_clean_exit(r, path)
    if r.code == 0:
        d = json.loads(r.out)
        assert d["valid"] and d["team"] in ("blue", "red") and d["form"] in ("live", "draft")
        assert d.get("models", d.get("stimuli")) >= 2


@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=SUBMISSIONS, to=st.sampled_from(["live", "draft"]))
def test_convert_survives_a_damaged_submission(setup, data, which, to):
    """A converted submission reads back as the same submission in the other form."""
    from modelseek.align.formats import load_align_submission

    path, valid = _victim(setup, which)
    path.write_bytes(data.draw(damaged(valid)))
    out = path.with_name("converted.json")
    out.unlink(missing_ok=True)
    r = run_cli("align", "convert", path, "--to", to, "-o", out, "--registry", setup["registry"])
    assert_clean_exit(r, path)
    if r.code == 0:
        a, b = load_align_submission(path), load_align_submission(out)
        assert (a.team, a.models, a.stimuli) == (b.team, b.models, b.stimuli)
        assert b.form.value == to or not (b.models or b.stimuli)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FEW
@given(data=st.data(), which=SUBMISSIONS)
def test_score_survives_a_damaged_submission(setup, data, which):
    path, valid = _victim(setup, which)
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("align", "score", path, *setup["common"], "--json")
    assert_clean_exit(r, path)
    if r.code == 0:
        assert 0 <= json.loads(r.out)["score"] <= 1


# ------------------------------------------------------------------------------------------ registry, catalog
@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_validate_survives_a_damaged_registry(setup, data):
    path, valid = _victim(setup, "registry")
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("align", "validate", "--registry", path, "--json")
    assert_clean_exit(r, path)
    if r.code == 0:
        assert json.loads(r.out)["models_in_registry"] >= 0


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FEW
@given(data=st.data())
def test_deep_validate_survives_a_damaged_registry(setup, data):
    """--deep builds each (tiny) model: a registry damaged into a wrong layer or size is a located failure."""
    path, valid = _victim(setup, "registry", "deep-registry.json")
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("align", "validate", "--registry", path, "--deep", "--json")
    assert_clean_exit(r, path)
    if r.code == 0:
        d = json.loads(r.out)
        assert d["valid"] and all(c["ok"] and c["dim"] > 0 for c in d["checks"])


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=st.sampled_from(["red-draft", "red-live"]))
def test_validate_survives_a_damaged_catalog(setup, data, which):
    path, valid = _victim(setup, "catalog")
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("align", "validate", setup[which], "--registry", setup["registry"], "--catalog", path,
                "--dataset-root", f"synth={setup['images']}")
    # the submission is named when the (damaged) catalog lacks its stimuli
    assert_clean_exit(r, path, setup[which])


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FEW
@given(data=st.data())
def test_matrix_survives_a_damaged_catalog(setup, data):
    path, valid = _victim(setup, "catalog", "matrix-catalog.jsonl")
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("align", "matrix", "--registry", setup["registry"], "--catalog", path, "--dataset-root",
                f"synth={setup['images']}", "--cache-dir", setup["root"] / "cache", "--json")
    assert_clean_exit(r, path, setup["images"])  # a stimulus renamed by the damage: its missing image is named
    if r.code == 0:
        C = np.array(json.loads(r.out)["cka_matrix"])
        assert np.all(np.isfinite(C)) and np.allclose(np.diag(C), 1) and np.allclose(C, C.T)


# ------------------------------------------------------------------------------------------ images
@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FEW
@given(data=st.data(), victim=st.integers(0, 3))
def test_score_survives_a_damaged_image(setup, data, victim):
    images = setup["root"] / "victims" / "synth"
    shutil.rmtree(images, ignore_errors=True)
    shutil.copytree(setup["images"], images)
    path = sorted(images.glob("*.png"))[victim]
    how = data.draw(st.sampled_from(["bytes", "dir", "empty"]))
    if how == "dir":
        path.unlink()
        path.mkdir()
    elif how == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(data.draw(damaged(path.read_bytes(), max_damages=2)))
    cache = setup["root"] / "victims" / "img-cache"
    shutil.rmtree(cache, ignore_errors=True)
    r = run_cli("align", "score", setup["red-live"], "--registry", setup["registry"], "--catalog", setup["catalog"],
                "--dataset-root", f"synth={images}", "--cache-dir", cache, "--json")
    assert_clean_exit(r, path, setup["red-live"])
    if r.code == 0:
        assert 0 <= json.loads(r.out)["score"] <= 1


# ------------------------------------------------------------------------------------------ precomputed inputs
@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=st.sampled_from(["matrix_npz", "matrix_csv"]))
def test_optimize_blue_survives_a_damaged_cka_matrix(setup, data, which):
    path, valid = _victim(setup, which)
    if which == "matrix_npz" and data.draw(st.booleans()):
        import io

        z = dict(np.load(setup[which]))
        key = data.draw(st.sampled_from(sorted(z)))
        how = data.draw(st.sampled_from(["nan", "inf", "huge", "drop", "shape", "object", "dup"]))
        if how == "drop":
            del z[key]
        elif how == "shape":
            z[key] = z[key][:-1]
        elif how == "dup":
            z["names"] = np.array(["a"] * len(z["names"]))
        elif how == "object":
            z[key] = np.array([{"x": 1}] * 3, dtype=object)
        elif key == "matrix":
            z[key] = z[key].copy()
            z[key][1, 2] = z[key][2, 1] = {"nan": np.nan, "inf": np.inf, "huge": 1e308}[how]
        buf = io.BytesIO()
        np.savez(buf, **z, allow_pickle=True) if how == "object" else np.savez(buf, **z)
        path.write_bytes(buf.getvalue())
    else:
        path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("align", "optimize", "--team", "blue", "--size", "3", "--cka-matrix", path, "--restarts", "2",
                "--steps", "200", "--json")
    assert_clean_exit(r, path)
    if r.code == 0:
        d = json.loads(r.out)
        assert len(set(d["selection"])) == 3 and math.isfinite(d["score"]) and -1 <= d["score"] <= 1


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=st.sampled_from(["manifest", "npy", "npy-values"]))
def test_optimize_red_survives_a_damaged_embeddings_folder(setup, data, which):
    folder = setup["root"] / "victims" / "emb"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(setup["emb"], folder)
    if which == "manifest":
        path = folder / "embeddings.json"
        path.write_bytes(data.draw(damaged(path.read_bytes())))
    else:
        path = sorted(folder.glob("*.npy"))[data.draw(st.integers(0, 2))]
        if which == "npy":
            path.write_bytes(data.draw(damaged(path.read_bytes(), max_damages=2)))
        else:
            F = np.load(path)
            how = data.draw(st.sampled_from(["nan", "inf", "huge", "tiny", "constant", "rows", "1d", "int"]))
            F = {"nan": lambda: np.where(F > F.mean(), np.nan, F), "inf": lambda: F * np.inf,
                 "huge": lambda: F * 1e300, "tiny": lambda: F * 1e-300, "constant": lambda: np.ones_like(F),
                 "rows": lambda: F[:-1], "1d": lambda: F[:, 0], "int": lambda: (F * 100).astype(np.int64)}[how]()
            np.save(path, F)
    r = run_cli("align", "optimize", "--team", "red", "--size", "4", "--embeddings", folder, "--steps", "100",
                "--json")
    assert_clean_exit(r, path)
    if r.code == 0:
        d = json.loads(r.out)
        assert len(set(d["selection"])) == 4 and math.isfinite(d["score"]) and 0 <= d["score"] <= 2


# ------------------------------------------------------------------------------------------ options
@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
@FUZZ
@given(option=st.sampled_from(["--size", "--steps", "--pool", "--restarts", "--seed"]), value=OPTION_VALUES,
       team=st.sampled_from(["blue", "red"]))
def test_optimize_numeric_options(setup, option, value, team):
    src = ("--cka-matrix", setup["matrix_npz"]) if team == "blue" else ("--embeddings", setup["emb"])
    args = {"--size": "3", "--steps": "100", "--restarts": "2"}
    args[option] = value
    r = run_cli("align", "optimize", "--team", team, *src, *(x for kv in args.items() for x in kv), "--json")
    assert_clean_exit(r)
    if r.code == 0:
        d = json.loads(r.out)
        assert len(set(d["selection"])) == int(args["--size"]) and math.isfinite(d["score"])


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FEW
@given(option=st.sampled_from(["--threshold", "--batch-size"]), value=OPTION_VALUES)
def test_matrix_numeric_options(setup, option, value):
    r = run_cli("align", "matrix", *setup["common"], option, value, "--json")
    assert_clean_exit(r)
    if r.code == 0:
        d = json.loads(r.out)
        C = np.array(d["cka_matrix"])
        t = float(value) if option == "--threshold" else 0.95
        assert 0 <= t <= 1 and np.allclose(C, C.T)
        assert len(d["near_duplicates"]) == sum(C[i, j] >= t for i in range(3) for j in range(i + 1, 3))


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FEW
@given(option=st.sampled_from(["--min-models", "--min-stimuli", "--max-models", "--max-stimuli"]),
       value=OPTION_VALUES, which=SUBMISSIONS)
def test_validate_numeric_options(setup, option, value, which):
    r = run_cli("align", "validate", setup[which], *setup["common"][:6], option, value, "--json")
    assert_clean_exit(r, setup[which])


# ------------------------------------------------------------------------------------------ paths
@pytest.mark.parametrize("role", ["submission", "registry", "catalog", "cka", "embeddings", "compare"])
@pytest.mark.parametrize("what", ["dir", "missing", "empty"])
def test_wrong_kind_of_path_is_one_line(setup, tmp_path, role, what):
    target = tmp_path / "x.json"
    if what == "dir":
        target.mkdir()
    elif what == "empty":
        target.write_bytes(b"")
    reg, cat = setup["registry"], setup["catalog"]
    if role == "submission":
        args = ("validate", target, "--registry", reg, "--catalog", cat)
    elif role == "registry":
        args = ("validate", setup["blue-draft"], "--registry", target)
    elif role == "catalog":
        args = ("validate", setup["red-live"], "--registry", reg, "--catalog", target)
    elif role == "cka":
        args = ("optimize", "--team", "blue", "--size", "2", "--cka-matrix", target)
    elif role == "embeddings":
        args = ("optimize", "--team", "red", "--size", "2", "--embeddings", target)
    else:
        args = ("optimize", "--team", "blue", "--size", "2", "--cka-matrix", setup["matrix_npz"], "--compare", target)
    r = run_cli("align", *args)
    assert r.code == 1, (r.code, r.err)
    assert_clean_exit(r, target)


# ------------------------------------------------------------------------------------------ regressions found here
def test_regression_empty_or_truncated_npz_is_one_line(setup, tmp_path):
    """Was an EOFError / BadZipFile traceback: an empty .npz, and one cut in the middle of its zip."""
    for name, data in (("empty.npz", b""), ("cut.npz", setup["matrix_npz"].read_bytes()[:200])):
        m = tmp_path / name
        m.write_bytes(data)
        r = run_cli("align", "optimize", "--team", "blue", "--size", "2", "--cka-matrix", m)
        assert r.code == 1 and r.err.startswith(f"error: {m}: cannot read the .npz") and r.err.count("\n") == 1, r.err


def test_regression_empty_or_non_numeric_npy_in_an_embeddings_folder(setup, tmp_path):
    """Was an EOFError traceback (empty .npy); a string array was accepted until the solver failed."""
    for how in ("empty", "strings", "missing"):
        folder = tmp_path / how
        shutil.copytree(setup["emb"], folder)
        f = folder / "cnn0.npy"
        if how == "empty":
            f.write_bytes(b"")
        elif how == "strings":
            np.save(f, np.array([["a"] * 3] * 8))
        else:
            f.unlink()
        r = run_cli("align", "optimize", "--team", "red", "--size", "4", "--embeddings", folder)
        named = folder / "embeddings.json" if how == "missing" else f  # a missing file: the manifest naming it
        assert r.code == 1 and r.err.startswith(f"error: {named}: ") and r.err.count("\n") == 1, (how, r.err)


def test_regression_empty_catalog_is_named(setup, tmp_path):
    """An empty catalog used to pass the reader and fail later without the file ('features[0] needs at
    least 2 stimuli', or 'not in the stimuli catalog' against the submission)."""
    cat = tmp_path / "catalog.jsonl"
    for data in (b"", b"\n\n"):
        cat.write_bytes(data)
        for args in (("matrix", *setup["common"][:2]), ("validate", setup["red-live"], *setup["common"][:2])):
            r = run_cli("align", *args, "--catalog", cat, "--dataset-root", f"synth={setup['images']}")
            assert r.code == 1 and r.err == f"error: {cat}: no stimuli (expected one JSON object per line)\n", r.err


def test_regression_convert_to_draft_names_the_submission(setup, tmp_path):
    """A live submission whose layer the draft form cannot hold: the error named no file."""
    sub = tmp_path / "live.json"
    sub.write_text(json.dumps({"models": [{"model_name": "cnn0", "layer_name": "features.0"}, {"model_name": "cnn1"}]}))
    r = run_cli("align", "convert", sub, "--to", "draft", "--registry", setup["registry"])
    assert r.code == 1 and r.err.startswith(f"error: {sub}: field 'models': model 'cnn0' uses layer 'features.0'"), r.err


def test_regression_a_line_separator_in_a_key_keeps_the_error_on_one_line(setup, tmp_path):
    """A key holding U+2028 (a line break to str.splitlines) was echoed raw in the field name."""
    sub = tmp_path / "live.json"
    sub.write_text('{"models": [{"\\u2028model_name": "cnn0"}]}')
    r = run_cli("align", "validate", sub, *setup["common"][:4])
    assert r.code == 1 and len(r.err.splitlines()) == 1 and "field 'models[0].\\u2028model_name'" in r.err, r.err
