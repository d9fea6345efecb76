"""Property-based fuzzing of ``modelseek duel`` (issue #14).

Every file a duel command reads — compiled submissions in modelseek's and BenCzechMark's formats, leaderboard
metadata, lm-evaluation-harness results and samples files, TREC runs — is damaged at random
(:mod:`modelseek.testing.fuzz`), and every option that takes a number or a database is given hostile values:
the command ends in exit 0 with a valid result, exit 1 with one located error line, or a usage error — never
a traceback. Examples are few, small (a 3-task leaderboard, 12 samples per task) and derandomised.
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
from modelseek.testing.duel import bcm_compiled, make_submission_dicts, small_config, write_harness_folder
from modelseek.testing.fuzz import NASTY_NUMBERS, assert_clean_exit, damaged, fuzz_settings

FUZZ = fuzz_settings(20)
FEW = fuzz_settings(8)

pytest.importorskip("sqlalchemy", reason="the duel storage needs SQLAlchemy: pip install 'modelseek[web]'")


@pytest.fixture(scope="module")
def duel(tmp_path_factory):
    """A 3-task leaderboard (acc, AUROC, perplexity), two models' submissions in both formats, a harness folder."""
    root = tmp_path_factory.mktemp("duelfuzz")
    cfg = small_config(("acc", "avg_mcauroc", "word_perplexity"))
    meta = root / "metadata.json"
    meta.write_text(json.dumps(cfg.to_dict()), encoding="utf-8")
    subs = make_submission_dicts(cfg, n_models=2, n_samples=12, seed=0)
    paths = []
    for d in subs:
        p = root / f"{d['metadata']['model']}.json"
        p.write_text(json.dumps(d, indent=1), encoding="utf-8")
        paths.append(p)
    harness = root / "harness"
    write_harness_folder(harness, subs[0], cfg)
    bcm = root / "bcm.json"
    bcm.write_text(json.dumps(bcm_compiled([harness], cfg), indent=1), encoding="utf-8")
    return {"root": root, "cfg": cfg, "meta": meta, "subs": paths, "harness": harness, "bcm": bcm}


def _victim(duel, src: Path, name: str | None = None) -> tuple[Path, bytes]:
    dst = duel["root"] / "victims" / (name or src.name)
    dst.parent.mkdir(exist_ok=True)
    return dst, src.read_bytes()


def _check_tournament_json(out: str, n_models: int) -> None:
    """A valid tournament result: win scores in [0, 1] for every model, p-values in [0, 1]."""
    res = json.loads(out)
    for d in res["duels"]:
        assert d["p_value"] is None or 0 <= d["p_value"] <= 1, d
    scores = res["scores"]
    assert scores, res
    for model, row in scores.items():
        for level, v in (row.items() if isinstance(row, dict) else [("overall", row)]):
            assert isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v <= 100, (model, level, v)


# ------------------------------------------------------------------------------------------ submissions
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), fmt=st.sampled_from(["modelseek", "bcm"]))
def test_tournament_survives_a_damaged_submission(duel, data, fmt):
    src = duel["subs"][1] if fmt == "modelseek" else duel["bcm"]
    path, valid = _victim(duel, src, f"victim-{fmt}.json")
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("duel", "tournament", duel["subs"][0], path, "--metadata", duel["meta"], "--draws", 20,
                "--resamples", 20, "--json")
    assert_clean_exit(r, path)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_validate_survives_a_damaged_submission(duel, data):
    path, valid = _victim(duel, duel["subs"][1], "victim-validate.json")
    path.write_bytes(data.draw(damaged(valid)))
    assert_clean_exit(run_cli("duel", "validate", path, "--metadata", duel["meta"]), path)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_tournament_survives_a_damaged_metadata_file(duel, data):
    path, valid = _victim(duel, duel["meta"], "victim-metadata.json")
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("duel", "tournament", *duel["subs"], "--metadata", path, "--draws", 20, "--resamples", 20)
    # a metadata file that still parses may no longer match the submissions: then they are the ones named
    assert_clean_exit(r, path, *duel["subs"])


@FEW
@given(value=st.sampled_from(NASTY_NUMBERS + ("1", "5", "0", "-1")), which=st.sampled_from(
    ["--alpha", "--draws", "--resamples", "--seed"]))
def test_tournament_number_options(duel, value, which):
    r = run_cli("duel", "tournament", *duel["subs"], "--metadata", duel["meta"], "--draws", 20, "--resamples", 20,
                which, value, "--json")
    assert_clean_exit(r)
    if r.code == 0:
        _check_tournament_json(r.out, 2)
        v = float(value)
        assert math.isfinite(v) and (v >= 0 if which == "--seed" else v > 0), (which, value)  # seed 0 is a seed
        if which == "--alpha":
            assert v < 1, value


# ------------------------------------------------------------------------------------------ compile
@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=st.sampled_from(["results", "samples"]))
def test_compile_survives_a_damaged_harness_folder(duel, data, which):
    folder = duel["root"] / "victims" / "harness"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(duel["harness"], folder)
    files = sorted(folder.rglob("results_*.json" if which == "results" else "samples_*.jsonl"))
    path = data.draw(st.sampled_from(files))
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    out = duel["root"] / "victims" / "compiled.json"
    r = run_cli("duel", "compile", folder, "-o", out, "--metadata", duel["meta"])
    assert_clean_exit(r, path, folder, "<compiled>")
    if r.code == 0:  # what compile writes is a valid submission
        assert_clean_exit(run_cli("duel", "validate", out, "--metadata", duel["meta"]), out)
        assert run_cli("duel", "validate", out, "--metadata", duel["meta"]).code == 0


@FEW
@given(params=st.sampled_from(NASTY_NUMBERS), model=st.sampled_from(["", " x", "a\x1bb", "ok", "m" * 300]))
def test_compile_options(duel, params, model):
    out = duel["root"] / "victims" / "compiled-opts.json"
    out.parent.mkdir(exist_ok=True)
    r = run_cli("duel", "compile", duel["harness"], "-o", out, "--metadata", duel["meta"], "--params", params,
                "--model", model)
    assert_clean_exit(r)
    if r.code == 0:
        obj = json.loads(out.read_text(encoding="utf-8"))
        assert math.isfinite(obj["metadata"]["n_params"]) and obj["metadata"]["n_params"] > 0
        assert obj["metadata"]["model"] == model


# ------------------------------------------------------------------------------------------ storage
DB_VALUES = ["text-file", "folder", "missing/nested/lb.db", "foo://x", "mysql://u@h/db", "sqlite:///",
             "postgresql+asyncpg://u@h/db", "", "binary-file", "sqlite-of-another-app"]


def _db(duel, kind: str) -> str:
    base = duel["root"] / "dbs"
    base.mkdir(exist_ok=True)
    if kind == "text-file":
        (base / "notes.txt").write_text("not a database\n")
        return str(base / "notes.txt")
    if kind == "binary-file":
        (base / "blob.db").write_bytes(bytes(range(256)) * 8)
        return str(base / "blob.db")
    if kind == "folder":
        return str(base)
    if kind == "sqlite-of-another-app":
        import sqlite3

        p = base / "other.db"
        if not p.exists():
            with sqlite3.connect(p) as con:
                con.execute("create table submissions (x integer)")
                con.execute("create table alembic_version (version_num text)")
                con.execute("insert into alembic_version values ('zzz-unknown')")
        return str(p)
    return kind


@pytest.mark.parametrize("kind", DB_VALUES)
@pytest.mark.parametrize("command", [("leaderboard",), ("confirm", "tok"), ("db", "upgrade")])
def test_hostile_db_values(duel, kind, command):
    r = run_cli("duel", *command, "--db", _db(duel, kind))
    assert_clean_exit(r)
    # none of these is a usable leaderboard database (an in-memory one keeps nothing): never a silent exit 0
    assert r.code != 0, (kind, command, r.out)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_presubmit_survives_a_damaged_submission(duel, data):
    path, valid = _victim(duel, duel["subs"][1], "victim-presubmit.json")
    path.write_bytes(data.draw(damaged(valid)))
    db = duel["root"] / "victims" / "presubmit.db"
    r = run_cli("duel", "presubmit", path, "--db", db, "--metadata", duel["meta"], "--json")
    assert_clean_exit(r, path)
    if r.code == 0:
        pv = json.loads(r.out)
        assert all(math.isfinite(v) and 0 <= v <= 100 for v in pv["scores"].values()), pv
        # the pending pre-submission can be confirmed exactly once (then a second confirm is a located error)
        c = run_cli("duel", "confirm", pv["token"], "--db", db, "--metadata", duel["meta"])
        assert c.code == 0, c.err
        again = run_cli("duel", "confirm", pv["token"], "--db", db, "--metadata", duel["meta"])
        assert again.code == 1
        db.unlink()


# ------------------------------------------------------------------------------------------ TREC runs
@pytest.fixture(scope="module")
def runs_case(tmp_path_factory):
    from modelseek import GroundTruth, Run
    from modelseek.testing import make_ntcir_layout

    root = tmp_path_factory.mktemp("duelruns")
    layout = make_ntcir_layout(root / "layout", n_tasks=6, n_models=4, seed=0)
    truth = GroundTruth.from_csv(layout / "ground-truth.csv")
    a, b = layout / "a.txt", layout / "b.txt"
    Run.from_scores({t: truth.f1(t) for t in truth.task_ids}, run_id="oracle").write(a)
    Run.from_scores({t: {m: -v for m, v in truth.f1(t).items()} for t in truth.task_ids}, run_id="worst").write(b)
    return {"root": root, "layout": layout, "a": a, "b": b}


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_runs_survives_a_damaged_run(runs_case, data):
    victim = runs_case["layout"] / "victim-run.txt"
    victim.write_bytes(data.draw(damaged(runs_case["b"].read_bytes())))
    r = run_cli("duel", "runs", runs_case["a"], victim, "--json")
    assert_clean_exit(r, victim)


@FEW
@given(alpha=st.sampled_from(NASTY_NUMBERS + ("0.5", "1", "0")))
def test_runs_alpha(runs_case, alpha):
    r = run_cli("duel", "runs", runs_case["a"], runs_case["b"], "--alpha", alpha, "--json")
    assert_clean_exit(r)
    assert (r.code == 0) == (0 < _float(alpha) < 1), (alpha, r.code, r.err)
    if r.code == 0:
        res = json.loads(r.out)
        assert res["scores"] and all(0 <= v <= 100 for row in res["scores"].values() for v in row.values()), res


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


# ------------------------------------------------------------------------------------------ issue #14's classes
@pytest.mark.parametrize("option,value", [("--alpha", "5"), ("--alpha", "nan"), ("--alpha", "0"), ("--alpha", "1"),
                                          ("--draws", "0"), ("--resamples", "0"), ("--seed", "-1"),
                                          ("--draws", "1e999")])
def test_tournament_refuses_out_of_range_options(duel, option, value):
    """Were exit 0 with a wrong answer (--alpha 5: everyone wins; --draws 0: NaN p-values): now usage errors."""
    r = run_cli("duel", "tournament", *duel["subs"], "--metadata", duel["meta"], option, value)
    assert r.code == 2 and f"argument {option}" in r.err, r.err


@pytest.mark.parametrize("kind", ["text-file", "foo://x", "sqlite:///"])
def test_presubmit_refuses_an_unusable_db(duel, kind):
    """A --db that is not a database, an unknown scheme, or in-memory (nothing would be kept): exit 1, one line."""
    r = run_cli("duel", "presubmit", duel["subs"][0], "--db", _db(duel, kind), "--metadata", duel["meta"])
    assert_clean_exit(r)
    assert r.code == 1 and "db" in r.err, r.err


def test_tournament_names_the_file_of_a_duplicate_model(duel):
    """Was 'field metadata.model: two submissions name the same model' without saying which file."""
    copy = duel["root"] / "victims" / "same-model.json"
    copy.parent.mkdir(exist_ok=True)
    shutil.copy(duel["subs"][0], copy)
    r = run_cli("duel", "tournament", duel["subs"][0], copy, "--metadata", duel["meta"])
    assert_clean_exit(r, copy)
    assert r.code == 1 and str(copy) in r.err and "model-00" in r.err, r.err


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FEW
@given(data=st.data(), which=st.sampled_from(["ground-truth.csv", "tasks.csv"]))
def test_runs_survives_damaged_truth_or_tasks_csv(runs_case, data, which):
    folder = runs_case["root"] / "victim-layout"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for name in ("ground-truth.csv", "tasks.csv"):
        shutil.copy(runs_case["layout"] / name, folder / name)
    path = folder / which
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    r = run_cli("duel", "runs", runs_case["a"], runs_case["b"], "-g", folder / "ground-truth.csv", "--tasks-csv",
                folder / "tasks.csv", "--json")
    assert_clean_exit(r, path, runs_case["a"], runs_case["b"])


def test_runs_with_a_short_tasks_csv_row(runs_case, tmp_path):
    """Was an AttributeError traceback: a tasks.csv row shorter than its header (criticality None)."""
    tasks = tmp_path / "tasks.csv"
    tasks.write_bytes(b"task_id,task_name,task_source,task_class_count,task_type,task_instruction,task_criticalness\r\n1")
    r = run_cli("duel", "runs", runs_case["a"], runs_case["b"], "-g", runs_case["layout"] / "ground-truth.csv",
                "--tasks-csv", tasks, "--json")
    assert_clean_exit(r, tasks, runs_case["layout"] / "ground-truth.csv")


# ------------------------------------------------------------------------------------------ found by exploring
def test_runs_tasks_csv_with_a_repeated_header_is_located(runs_case, tmp_path):
    """The error named ground-truth.csv for a value read from tasks.csv (a header row pasted twice)."""
    src = (runs_case["layout"] / "tasks.csv").read_text().splitlines()
    tasks = tmp_path / "tasks.csv"
    tasks.write_text("\n".join([src[0], src[0], *src[1:]]) + "\n")
    r = run_cli("duel", "runs", runs_case["a"], runs_case["b"], "-g", runs_case["layout"] / "ground-truth.csv",
                "--tasks-csv", tasks, "--json")
    assert r.code == 1 and r.err.strip().startswith(f"error: {tasks}:2: field 'task_criticalness': "), r.err
    again = tmp_path / "again.csv"
    again.write_text("\n".join([*src, src[1]]) + "\n")
    r = run_cli("duel", "runs", runs_case["a"], runs_case["b"], "-g", runs_case["layout"] / "ground-truth.csv",
                "--tasks-csv", again, "--json")
    assert r.code == 1 and f"error: {again}:{len(src) + 1}: field 'task_id': " in r.err and "listed again" in r.err


def test_submission_with_an_integer_no_float_holds_is_located(duel, tmp_path):
    """A JSON integer such as 10**400 was an OverflowError traceback (math.isfinite of a huge int)."""
    text = Path(duel["subs"][0]).read_text()
    obj = json.loads(text)
    task = next(iter(obj["predictions"]))
    metric = next(k for k in obj["predictions"][task][0] if k != "doc_id")
    obj["predictions"][task][0][metric] = 7
    bad = tmp_path / "huge.json"
    bad.write_text(json.dumps(obj, indent=1).replace(f'"{metric}": 7', f'"{metric}": 1{"0" * 400}', 1))
    r = run_cli("duel", "validate", bad, "--metadata", duel["meta"])
    assert r.code == 1 and "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert f"error: {bad}:" in r.err and "overflows a float" in r.err


@pytest.mark.parametrize("option", ["--draws", "--resamples"])
def test_tournament_sample_counts_are_bounded(duel, option):
    """--draws 10**400 allocated an array of that length (numpy: "Maximum allowed dimension exceeded")."""
    for value, code in (("1" + "0" * 400, 2), ("10000001", 2), ("0", 2), ("3", 0)):
        r = run_cli("duel", "tournament", *duel["subs"], "--metadata", duel["meta"], option, value, "--json")
        assert r.code == code, (option, value, r.err)
    assert "1..10,000,000" in run_cli("duel", "tournament", "--help").out


def test_compile_with_an_empty_model_name_is_refused(duel, tmp_path):
    out = tmp_path / "c.json"
    r = run_cli("duel", "compile", duel["harness"], "-o", out, "--metadata", duel["meta"], "--model", " ")
    assert r.code == 1 and "field 'model': the model name is empty" in r.err and not out.exists()


def test_runs_with_a_run_matching_no_model_names_the_run_file(runs_case, tmp_path):
    """Found by the exploring fuzz run (seed 3): the error named no file."""
    victim = tmp_path / "nan-run.txt"
    victim.write_text("1001 Q0 nan 1 0.5 vorst\n")
    r = run_cli("duel", "runs", runs_case["a"], victim, "--json")
    assert r.code == 1 and r.err.strip().startswith(f"error: {victim}: field 'docID': run 'vorst': no docID "), r.err


# ------------------------------------------------------------------------------------------ issue #23
@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
@FUZZ
@given(name=st.text(min_size=0, max_size=24))
def test_any_model_name_is_refused_or_stored_showable(duel, name):
    """Any text as a model name (surrogates, controls, bidi, combining marks, full-width...): refused with a
    located error, or accepted NFC, printable when encoded, with a stable confusable-safe key."""
    import unicodedata

    from modelseek.duel.submission import validate_submission
    from modelseek.duel.text import name_key, safe_str
    from modelseek.core.errors import InputError

    d = json.loads(duel["subs"][0].read_text(encoding="utf-8"))
    d["metadata"]["model"] = name
    try:
        sub = validate_submission(d, duel["cfg"])
    except InputError as exc:
        assert exc.field == "metadata.model" and "\n" not in str(exc)
        return
    model = sub.model
    assert model == unicodedata.normalize("NFC", model) == model.strip() and model
    assert safe_str(model) == model and model.encode("utf-8")
    assert all(unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in model)
    assert name_key(model) == name_key(name_key(model)) or name_key(model)      # computed without error


@FUZZ
@given(key=st.sampled_from(["precision", "model", "doc_id", "acc"]), number=st.sampled_from(
    ["1e-400", "-2.5e-320", "1e400", "0.0e-999", "123456789e-340"]), where=st.integers(0, 1))
def test_duplicate_keys_and_extreme_numbers_are_located(duel, key, number, where):
    """The strict upload reader: a duplicated key anywhere and a number a double cannot hold (overflow, or
    underflow to 0; an exact zero and a subnormal are values) is one error naming the line, never a silent
    value."""
    from modelseek.duel.text import loads_strict
    from modelseek.core.errors import InputError

    text = duel["subs"][0].read_text(encoding="utf-8")
    lines = text.splitlines()
    target = next(i for i, ln in enumerate(lines) if f'"{key}":' in ln)
    if where == 0:                               # the key twice in its object
        lines.insert(target, lines[target].rstrip(",") + ",")
        kind = "duplicate key"
    else:                                        # the number in place of the key's value
        head = lines[target].split(":", 1)[0]
        lines[target] = f"{head}: {number}" + ("," if lines[target].rstrip().endswith(",") else "")
        kind = None if number in ("0.0e-999", "-2.5e-320") else "flows a float"   # exact 0, a subnormal: values
    body = "\n".join(lines)
    if kind is None:
        loads_strict(body, "x.json")
        return
    with pytest.raises(InputError) as exc:
        loads_strict(body, "x.json")
    assert kind in str(exc.value) and exc.value.line is not None and 1 <= exc.value.line <= len(lines)
