"""Tasks, pools and ground truth: loaders, the organisers' split rules, derived columns, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from modelseek import Criticality, GroundTruth, load_ntcir_tasks, load_pool, load_table_task
from modelseek.retrieval.data.loaders import from_hf_dataset
from modelseek.core.errors import InputError


def test_ntcir_layout_loads_with_metadata(tiny_layout):
    tasks = load_ntcir_tasks(tiny_layout)
    assert len(tasks) == 12 and tasks.ids[0] == "1001"
    t = tasks.get("1001")
    assert len(t.train) == 60 and len(t.val) == 20 and len(t.test) == 20
    assert t.criticality in set(Criticality)
    assert t.instruction.startswith("Classify")
    assert 2 <= t.num_classes <= 5


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_table_task_with_and_without_split_column(tmp_path):
    df = pd.DataFrame({"text": [f"text number {i}" for i in range(100)], "label": ["a", "b"] * 50})
    df.to_csv(tmp_path / "plain.csv", index=False)
    t = load_table_task(tmp_path / "plain.csv")
    assert (len(t.train), len(t.val), len(t.test)) == (80, 10, 10)
    # stratified: both classes in every split
    assert set(t.val.labels) == {"a", "b"} and set(t.test.labels) == {"a", "b"}
    # seed 0 by default: the same split twice
    assert load_table_task(tmp_path / "plain.csv").val == t.val
    df["split"] = ["train"] * 70 + ["validation"] * 20 + ["test"] * 10
    df.to_csv(tmp_path / "split.csv", index=False)
    t2 = load_table_task(tmp_path / "split.csv")
    assert (len(t2.train), len(t2.val), len(t2.test)) == (70, 20, 10)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_hf_dataset_rules():
    datasets = pytest.importorskip("datasets")
    n = 12000
    ds = datasets.Dataset.from_dict({"title": [f"t{i}" for i in range(n)], "body": [f"b{i}" for i in range(n)],
                                     "label": [i % 3 for i in range(n)]})
    ds = ds.cast_column("label", datasets.ClassLabel(names=["neg", "neu", "pos"]))
    # only train: 80/10/10, each capped at 5,000
    t = from_hf_dataset(ds, ["title", "body"], "label", task_id="x")
    assert (len(t.train), len(t.val), len(t.test)) == (5000, 1200, 1200)
    assert t.train.texts[0].count(". ") == 1 and set(t.label_names) == {"neg", "neu", "pos"}
    # train + test: 10% of train becomes validation
    dd = datasets.DatasetDict({"train": ds.select(range(1000)), "test": ds.select(range(1000, 1300))})
    t2 = from_hf_dataset(dd, "title", "label")
    assert (len(t2.train), len(t2.val), len(t2.test)) == (900, 100, 300)
    # own validation split is kept
    dd3 = datasets.DatasetDict({"train": ds.select(range(100)), "validation": ds.select(range(100, 130))})
    t3 = from_hf_dataset(dd3, "title", "label")
    assert (len(t3.train), len(t3.val)) == (100, 30)
    # one-hot label columns become one label
    oh = datasets.Dataset.from_dict({"text": [f"x{i}" for i in range(50)],
                                     "sports": [1 if i % 2 else 0 for i in range(50)],
                                     "politics": [0 if i % 2 else 1 for i in range(50)]})
    t4 = from_hf_dataset(oh, "text", ["sports", "politics"])
    assert set(t4.label_names) == {"sports", "politics"}
    with pytest.raises(InputError, match="unknown column"):
        from_hf_dataset(oh, "text", "label")


def _jsonl(path: Path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
def test_bad_task_files_name_file_line_field(tmp_path, cli):
    folder = tmp_path / "task" / "5"
    folder.mkdir(parents=True)
    _jsonl(folder / "train.jsonl", [{"text": "good", "labels": "a"}, {"text": "bad", "labels": "b"},
                                    {"text": "  ", "labels": "a"}])
    _jsonl(folder / "val.jsonl", [{"text": "v", "labels": "a"}])
    r = cli("rank", folder)
    assert r.code == 1 and "train.jsonl:3: field 'text': empty text" in r.err
    _jsonl(folder / "train.jsonl", [{"text": "one", "labels": "a"}, {"text": "two", "labels": "a"}])
    r = cli("rank", folder)
    assert r.code == 1 and "field 'labels'" in r.err and "only one class" in r.err
    csv = tmp_path / "d.csv"
    pd.DataFrame({"text": [f"x{i}" for i in range(20)], "category": ["a", "b"] * 10}).to_csv(csv, index=False)
    r = cli("rank", csv)
    assert r.code == 1 and "d.csv:1: field 'label': unknown column" in r.err
    r = cli("rank", csv, "--label-col", "category")
    assert r.code == 0, r.err
    pd.DataFrame({"text": ["x", "y"], "label": ["a", "b"]}).to_csv(csv, index=False)
    r = cli("rank", csv)
    assert r.code == 1 and "d.csv: only 2 example(s) to train on" in r.err and "'split' column" in r.err


def test_ground_truth_derivations():
    df = pd.DataFrame([("t", "a", 0.8), ("t", "b", 0.8), ("t", "c", 0.4), ("u", "a", 0.5), ("u", "b", 0.9),
                       ("u", "c", 0.9)], columns=["task_id", "model_id", "f1"])
    gt = GroundTruth(df)
    f = gt.frame.set_index(["task_id", "model_id"])
    assert f.loc[("t", "a"), "model_rank"] == 1 and f.loc[("t", "b"), "model_rank"] == 1
    assert f.loc[("t", "c"), "model_rank"] == 3
    assert f.loc[("t", "c"), "normalized_f1"] == pytest.approx(0.5)
    # R(t) = 1 - mean(1, 1, 0.5) = 1/6 -> high; R(u) = 1 - mean(5/9, 1, 1) = 0.148 -> high
    assert gt.regret("t") == pytest.approx(1 / 6)
    assert gt.criticality("t") is Criticality.HIGH
    low = GroundTruth(pd.DataFrame([("v", "a", 0.9), ("v", "b", 0.89)], columns=["task_id", "model_id", "f1"]))
    assert low.criticality("v") is Criticality.LOW
    med = GroundTruth(pd.DataFrame([("w", "a", 1.0), ("w", "b", 0.9)], columns=["task_id", "model_id", "f1"]))
    assert med.criticality("w") is Criticality.MEDIUM   # R = 0.05
    given = GroundTruth(df, criticality={"t": "Low Criticalness"})
    assert given.criticality("t") is Criticality.LOW and given.criticality("u") is Criticality.HIGH


def test_ground_truth_file_errors(tmp_path):
    p = tmp_path / "gt.csv"
    p.write_text("task_id,model_id,f1\n1,1,0.5\n1,2,abc\n")
    with pytest.raises(InputError, match=r"gt.csv:3: field 'f1'"):
        GroundTruth.from_csv(p)
    p.write_text("task_id,model,f1\n")
    with pytest.raises(InputError, match=r"gt.csv:1: field 'model_id'"):
        GroundTruth.from_csv(p)


def test_official_ground_truth_columns_are_reproduced(ntcir_a):
    gt = GroundTruth.from_csv(ntcir_a / "ground-truth.csv")
    official = pd.read_csv(ntcir_a / "ground-truth.csv", dtype={"task_id": str, "model_id": str})
    ours = gt.to_frame().merge(official, on=["task_id", "model_id"], suffixes=("", "_off"))
    assert len(ours) == 1400
    assert (ours["model_rank"] == ours["model_rank_off"]).all()
    assert np.allclose(ours["normalized_f1"], ours["normalized_f1_off"], atol=1e-12)
    assert (ours["relevance_score"] == ours["relevance_score_off"]).all()
    # criticality comes from tasks.csv beside the file
    assert gt.criticality("1011") is Criticality.HIGH


def test_pools(tmp_path):
    ntcir = load_pool("ntcir19")
    assert ntcir.ids == [str(i) for i in range(1, 21)] and ntcir.get("5").hf_id == "bert-base-uncased"
    y = tmp_path / "p.yaml"
    y.write_text("candidates:\n  - {id: m1, hf_id: org/m1, path: models/m1}\n  - org/m2\n")
    pool = load_pool(y)
    assert pool.ids == ["m1", "org/m2"] and pool.get("m1").path == str((tmp_path / "models/m1").resolve())
    y.write_text("candidates:\n  - {id: m1, hfid: org/m1}\n")
    with pytest.raises(InputError, match=r"field 'candidates\[0\].hfid'"):
        load_pool(y)
    with pytest.raises(InputError, match="built-in pools"):
        load_pool(tmp_path / "nope.yaml")


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_import_modelseek_is_light():
    """`import modelseek` (the top-level verbs and nouns) loads none of the heavy libraries; pandas and
    scipy come with the first call that needs them."""
    import subprocess
    import sys

    heavy = ("pandas", "scipy", "sklearn", "torch", "transformers", "matplotlib")
    code = f"import sys, modelseek; print(*[m in sys.modules for m in {heavy!r}])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": "src", "PATH": ""}).stdout.split()
    assert out == ["False"] * len(heavy)
    code = "import modelseek.core.stats as s; print(s.paired_ttest.__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": "src", "PATH": ""}).stdout.strip()
    assert out == "modelseek.core.stats.ttest"


# ------------------------------------------------------------------------------------------------ label kinds
def _feature_inputs(task, estimator: str = "logme"):
    """The task as a frozen-feature job reads it (labels, regression or not)."""
    from modelseek.retrieval.rankers.feature_jobs import FeatureJobConfig, prepare_tasks

    (inp,) = prepare_tasks([task], FeatureJobConfig(estimators=(estimator,)))
    return inp


def test_the_task_declares_its_label_kind_never_the_look_of_its_labels(tmp_path):
    from modelseek.retrieval.data.organisers import find_layout, load_split
    from modelseek.retrieval.data.task import LabelKind
    from modelseek.testing.organisers import make_organisers_layout

    repo = make_organisers_layout(tmp_path / "repo", n_test=5, n_train_tasks=2, snapshots=(), rating_task=5,
                                  wide_task=None)
    t5 = load_split(find_layout(repo), "test").get("5")  # JSON floats 0.0 ... 1.0; tasks.csv: 11 classes
    assert t5.metadata["task_class_count"] == "11" and t5.label_kind is LabelKind.CLASS and not t5.regression
    assert set(t5.label_names) == {f"{k / 10:.1f}" for k in range(11)}
    inp = _feature_inputs(t5, "knn")  # kNN, which needs classes, takes it
    assert not inp.regression and len(set(inp.train_labels)) == 11


def test_tasks_csv_and_label_kind_option_declare_the_kind(tmp_path):
    from modelseek.retrieval.data.task import LabelKind

    assert LabelKind.declared({"task_class_count": "11"}) is LabelKind.CLASS
    assert LabelKind.declared({"task_class_count": "1"}) is LabelKind.NUMBER
    assert LabelKind.declared({"task_class_count": "11", "label_kind": "number"}) is LabelKind.NUMBER
    assert LabelKind.declared({"task_class_count": ""}) is None and LabelKind.declared(None) is None
    with pytest.raises(InputError, match="label_kind.*valid values: class, number"):
        LabelKind.declared({"label_kind": "ordinal"})
    ratings = pd.DataFrame({"text": [f"query {i} words" for i in range(60)],
                            "label": [f"{(i % 11) / 10:.1f}" for i in range(60)]})
    ratings.to_csv(tmp_path / "r.csv", index=False)
    plain = load_table_task(tmp_path / "r.csv")  # a table declares nothing: classes
    assert plain.label_kind is None and not plain.regression and not _feature_inputs(plain).regression
    number = load_table_task(tmp_path / "r.csv", label_kind="number")
    assert number.regression and _feature_inputs(number).regression
    with pytest.raises(InputError, match="task r: a regression task .* knn needs class labels"):
        _feature_inputs(number, "knn")


def test_a_tasks_csv_with_a_bad_label_kind_is_located(tmp_path):
    from modelseek.testing import make_ntcir_layout

    root = make_ntcir_layout(tmp_path / "n", n_tasks=3, n_models=4, seed=0)
    csv_path = next(root.rglob("tasks.csv"))
    df = pd.read_csv(csv_path, dtype=str)
    df["label_kind"] = "ordinal"
    df.to_csv(csv_path, index=False)
    with pytest.raises(InputError, match="tasks.csv: field 'label_kind': unknown label kind 'ordinal'"):
        load_ntcir_tasks(root)


def test_the_official_tasks_csv_declares_every_task_a_classification_task(ntcir_a):
    from modelseek.retrieval.data.loaders import read_tasks_csv
    from modelseek.retrieval.data.task import LabelKind

    rows = read_tasks_csv(ntcir_a / "tasks.csv")
    assert rows["33"]["task_name"] == "google-research-datasets/google_wellformed_query"
    assert LabelKind.declared(rows["33"]) is LabelKind.CLASS  # its 0.0 ... 1.0 ratings are 11 classes
    assert {LabelKind.declared(r) for r in rows.values()} == {LabelKind.CLASS}


def test_rank_label_kind_option_through_the_cli(cli, tmp_path):
    from modelseek.testing.cli import assert_one_error_line

    rows = ["text,label"] + [f"query {i} words,{(i % 11) / 10:.1f}" for i in range(60)]
    (tmp_path / "r.csv").write_text("\n".join(rows) + "\n")
    r = cli("rank", tmp_path / "r.csv", "-m", "knn", "--label-kind", "number", "--param",
            f"cache_dir={tmp_path / 'c'}")
    assert_one_error_line(r, "task r: a regression task (label kind number", "knn needs class labels")
    assert cli("rank", tmp_path / "r.csv", "--label-kind", "ordinal").code == 2  # argparse lists the choices
