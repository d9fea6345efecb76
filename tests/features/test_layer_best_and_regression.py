"""``layer: best`` (score every layer, keep the best, the layer shown by ``rank``) and regression tasks (numeric
labels: LogME's regression form and kNN regression; estimators that need classes refused in one line), through
``rank`` on tiny random models (issue #28 item 4)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import yaml

import modelseek.retrieval.estimators as est
from modelseek.retrieval.data.loaders import load_ntcir_tasks, load_table_task
from modelseek.retrieval.features import extract_features
from modelseek.retrieval.rankers.features import is_regression


@pytest.fixture
def pool_file(tiny_bert, tiny_roberta, tmp_path):
    p = tmp_path / "pool.yaml"
    p.write_text(yaml.safe_dump({"name": "tiny", "candidates": [{"id": "1", "path": str(tiny_bert)},
                                                                 {"id": "2", "path": str(tiny_roberta)}]}))
    return p


@pytest.fixture
def regression_csv(tmp_path):
    rng = random.Random(0)
    words = "good bad great awful fine poor nice terrible okay lovely".split()
    rows = ["text,label"]
    for _ in range(60):
        ws = [rng.choice(words) for _ in range(rng.randint(4, 12))]
        y = sum(w in ("good", "great", "nice", "lovely") for w in ws) / len(ws) + rng.random() * 0.1
        rows.append(f"{' '.join(ws)},{y:.3f}")
    p = tmp_path / "reg.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def _layers(path) -> int:
    return json.loads((path / "config.json").read_text())["num_hidden_layers"]


@pytest.mark.slow(reason="21 s (setup and call) on 2 busy cores")
def test_layer_best_keeps_the_best_layer_and_rank_reports_it(cli, tmp_path, pool_file, tiny_bert, tiny_roberta):
    from modelseek.testing import make_ntcir_layout

    lay = make_ntcir_layout(tmp_path / "lay", n_tasks=2, n_models=2, seed=0)
    cache = f"cache_dir={tmp_path / 'c'}"
    r = cli("rank", lay, "--pool", pool_file, "-m", "logme", "--param", "layer=best", "--param", cache, "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)["logme"]
    tasks = {t.id: t for t in load_ntcir_tasks(lay)}
    assert set(got) == set(tasks)
    for tid, entries in got.items():
        t = tasks[tid]
        texts, labels = list(t.train.texts) + list(t.val.texts), list(t.train.labels) + list(t.val.labels)
        for e in entries:
            path = tiny_bert if e["doc"] == "1" else tiny_roberta
            per = [est.get("logme")(extract_features(texts, str(path), layer=i, cache_dir=False, progress=False),
                                    labels) for i in range(1, _layers(path) + 1)]
            assert e["score"] == pytest.approx(max(per), abs=1e-6)
            assert e["layer"] == str(int(np.argmax(per)) + 1)
    text = cli("rank", lay, "--pool", pool_file, "-m", "logme", "--param", "layer=best", "--param", cache)
    assert text.code == 0 and text.out.count("(layer ") == 4, text.out  # 2 tasks x 2 candidates
    plain = cli("rank", lay, "--pool", pool_file, "-m", "logme", "--param", cache)
    assert plain.code == 0 and "(layer " not in plain.out
    bad = cli("rank", lay, "--pool", pool_file, "-m", "logme", "--param", "layer=top", "--param", cache)
    assert bad.code == 1 and "unknown layer 'top'; valid values: last, mean, all, best" in bad.err


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_numeric_labels_are_a_regression_task_for_logme_and_knn(cli, tmp_path, pool_file, tiny_roberta,
                                                                 regression_csv):
    cache = f"cache_dir={tmp_path / 'c'}"
    r = cli("rank", regression_csv, "--pool", pool_file, "-m", "logme", "knn_loo", "--param", cache, "--json",
            "--label-kind", "number")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    task = load_table_task(regression_csv, text_col="text", label_col="label", label_kind="number")
    texts = list(task.train.texts) + list(task.val.texts)
    y = np.array([float(v) for v in list(task.train.labels) + list(task.val.labels)])
    feats = extract_features(texts, str(tiny_roberta), cache_dir=False, progress=False)
    scores = {m: {e["doc"]: e["score"] for e in out[m][task.id]} for m in ("logme", "knn_loo")}
    assert scores["logme"]["2"] == pytest.approx(est.get("logme")(feats, y, task="regression"), abs=1e-9)
    assert scores["knn_loo"]["2"] == pytest.approx(est.get("knn_loo")(feats, y, task="regression"), abs=1e-9)
    # as classes, the 60 distinct values would fail (one example per class): the regression path is taken
    with pytest.raises(Exception, match="examples of every class"):
        est.get("knn_loo")(feats, y.astype(str))


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("method", ["hscore", "knn", "leep"])
def test_estimators_that_need_classes_refuse_a_regression_task_in_one_line(cli, tmp_path, pool_file, method,
                                                                            regression_csv, load_counter):
    r = cli("rank", regression_csv, "--pool", pool_file, "-m", method, "--param", f"cache_dir={tmp_path / 'c'}",
            "--label-kind", "number")
    assert r.code == 1 and len(r.err.strip().splitlines()) == 1, r.err
    assert (f"task reg: a regression task (label kind number, e.g. '" in r.err
            and f"{method} needs class labels; estimators for regression: knn_loo, logme" in r.err)
    assert load_counter == []  # refused before any model is loaded


def test_which_labels_make_a_regression_task():
    assert is_regression(["0.5", "1", "2.25"]) and is_regression(["3.0", "4.0"]) and is_regression(["1e-3", "2"])
    assert not is_regression(["0", "1", "2"]) and not is_regression(["-1", "+1"])     # class ids
    assert not is_regression(["0.5", "good"]) and not is_regression(["nan", "0.5"]) and not is_regression([])
