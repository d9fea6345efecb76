"""Feature-based rankers through the public API and the CLI, on tiny random and packaged models."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest
import yaml

import modelseek as ms
import modelseek.retrieval.estimators as est
import modelseek.retrieval.features.text as text_mod
from modelseek.retrieval.data.pool import Candidate, Pool, load_pool
from modelseek.retrieval.features import extract_features
from modelseek.retrieval.rankers import make, names
from modelseek.retrieval.rankers.features import CandidateFailures, reciprocal_rank_fusion
from modelseek.testing import make_text_task


@pytest.fixture(scope="module")
def task():
    return make_text_task("t1", n_train=60, n_val=30, n_classes=3, seed=0)


@pytest.fixture
def pool(tiny_bert, tiny_roberta, tmp_path):
    return Pool([Candidate(id="1", path=str(tiny_bert), family="bert"),
                 Candidate(id="2", path=str(tiny_roberta), family="roberta"),
                 Candidate(id="3", path=str(tiny_bert), options={"pooling": "cls", "layer": "mean"})],
                name="tiny")


def test_every_estimator_is_a_ranker():
    for n in est.names():
        assert n in names()
        r = make(n)
        assert r.needs_text and not r.needs_fit and r.estimator == n
    assert "rrf" in names()


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_logme_ranking_equals_estimator_on_extracted_features(task, pool, tmp_path):
    run = ms.rank(task, pool, method="logme", cache_dir=tmp_path)
    assert run.run_id == "logme" and set(run.ranking(task.id)) == {"1", "2", "3"}
    texts = list(task.train.texts) + list(task.val.texts)
    labels = list(task.train.labels) + list(task.val.labels)
    for cand in pool:
        kw = {k: cand.options[k] for k in ("pooling", "layer") if k in cand.options}
        feats = extract_features(texts, cand, cache_dir=False, progress=False, **kw)
        assert run.scores(task.id)[cand.id] == pytest.approx(est.get("logme")(feats, labels), abs=1e-6)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_knn_uses_train_and_validation_splits(task, pool, tmp_path):
    run = ms.rank(task, pool, method="knn", cache_dir=tmp_path)
    cand = pool.get("2")
    ftr = extract_features(list(task.train.texts), cand, cache_dir=False, progress=False)
    fva = extract_features(list(task.val.texts), cand, cache_dir=False, progress=False)
    want = est.get("knn")(ftr, list(task.train.labels), val_features=fva, val_labels=list(task.val.labels))
    assert run.scores(task.id)["2"] == pytest.approx(want, abs=1e-9)


def test_second_rank_reuses_cache_without_forward_pass(task, pool, tmp_path, load_counter):
    calls = load_counter
    first = ms.rank(task, pool, method="hscore", cache_dir=tmp_path)
    assert len(calls) == 3
    again = ms.rank(task, pool, method="hscore", cache_dir=tmp_path)
    assert len(calls) == 3  # all three candidates served from the cache: no model load, no forward pass
    assert again == first


def test_failed_candidate_stops_the_rank_unless_allowed(task, pool, tmp_path):
    """The failure policy (issue #15): a failure is an error naming the candidate; allowed, it is absent."""
    broken = Pool([*pool, Candidate(id="9", path=str(tmp_path / "no-such-model"))], name="with-broken")
    with pytest.raises(CandidateFailures, match=r"1 of 4 candidate\(s\) failed") as info:
        ms.rank(task, broken, method="logme", cache_dir=tmp_path / "c")
    assert "candidate 9" in str(info.value) and "no-such-model" in str(info.value)
    assert set(info.value.failures) == {"9"}
    run = ms.rank(task, broken, method="logme", cache_dir=tmp_path / "c", allow_failures=True)
    assert run.ranking(task.id) == ms.rank(task, pool, method="logme", cache_dir=tmp_path / "c").ranking(task.id)
    assert "9" not in run.scores(task.id) and all(math.isfinite(v) for v in run.scores(task.id).values())


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_rrf_fuses_reciprocal_ranks(task, pool, tmp_path):
    fused = ms.rank(task, pool, method="rrf", methods=["logme", "knn"], rrf_k=60, cache_dir=tmp_path)
    parts = [ms.rank(task, pool, method=m, cache_dir=tmp_path) for m in ("logme", "knn")]
    for cid in pool.ids:
        want = sum(1.0 / (60 + r.ranking(task.id).index(cid) + 1) for r in parts)
        assert fused.scores(task.id)[cid] == pytest.approx(want, rel=1e-6)


def test_rrf_puts_a_candidate_failed_everywhere_last():
    fused = reciprocal_rank_fusion([{"a": 1.0, "b": 2.0, "c": -math.inf}, {"a": 3.0, "b": 0.0, "c": -math.inf}])
    assert fused["c"] == -math.inf
    assert fused["a"] == pytest.approx(1 / 62 + 1 / 61) and fused["b"] == pytest.approx(1 / 61 + 1 / 62)


def test_leep_needs_a_classification_head(task, tmp_path, tiny_bert, caplog):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    head = tmp_path / "with-head"
    cfg = BertConfig.from_pretrained(tiny_bert, num_labels=4)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        BertForSequenceClassification(cfg).save_pretrained(head)
    BertTokenizerFast.from_pretrained(tiny_bert).save_pretrained(head)
    pool = Pool([Candidate(id="1", path=str(head)), Candidate(id="2", path=str(tiny_bert))])
    with pytest.raises(CandidateFailures, match="candidate 2 .*no sequence-classification head"):
        ms.rank(task, pool, method="leep", cache_dir=tmp_path / "c")
    run = ms.rank(task, pool, method="leep", cache_dir=tmp_path / "c", allow_failures=True)
    assert math.isfinite(run.scores(task.id)["1"]) and run.scores(task.id)["1"] <= 0
    assert run.ranking(task.id) == ["1"]  # the headless candidate is absent, not scored


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_cli_rank_tiny_layout_writes_valid_run(cli, tiny_layout, tiny_bert, tiny_roberta, tmp_path):
    pool_file = tmp_path / "pool.yaml"
    pool_file.write_text(yaml.safe_dump({"name": "tiny", "candidates": [
        {"id": "1", "path": str(tiny_bert)}, {"id": "2", "path": str(tiny_roberta)},
        {"id": "3", "path": str(tiny_bert), "options": {"pooling": "cls"}}]}))
    out = tmp_path / "run.txt"
    r = cli("rank", tiny_layout, "--pool", pool_file, "-m", "logme", "knn", "-o", out,
            "--param", f"cache_dir={tmp_path / 'c'}", "--param", "max_examples=40")
    assert r.code == 0, r.err
    assert cli("validate", out, "--pool", pool_file).code == 0
    lines = out.read_text().splitlines()
    assert {ln.split()[-1] for ln in lines} == {"logme", "knn"} and len(lines) == 2 * 12 * 3
    f = tmp_path / "fused.txt"
    r = cli("rank", tiny_layout, "--pool", pool_file, "-m", "logme", "knn", "--fusion", "rrf", "-o", f,
            "--param", f"cache_dir={tmp_path / 'c'}", "--param", "max_examples=40")
    assert r.code == 0, r.err
    assert {ln.split()[-1] for ln in f.read_text().splitlines()} == {"rrf-logme-knn"}
    assert cli("rank", tiny_layout, "--pool", pool_file, "-m", "logme", "--param", "oops").code == 1


def test_offline_pool_loads_without_the_hub():
    pool = load_pool("offline")
    assert len(pool) == 4
    for c in pool:
        assert c.path.startswith("package:")
        assert (text_mod.resolve_source(c.path) + "/config.json")
    assert Path(text_mod.resolve_source(pool[0].path), "config.json").exists()


@pytest.mark.slow(reason="11 s (setup and call) on 2 busy cores")
@pytest.mark.shared_data
def test_ntcir_task_with_offline_pool(cli, ntcir_a, tmp_path, load_counter, caplog):
    """The acceptance run: a real NTCIR training task, the offline pool, a valid run, cache reuse and a
    corrupted cache file detected and recomputed."""
    task_dir = ntcir_a / "task-data" / "train-tasks" / "1094"
    out = tmp_path / "run.txt"
    cache = tmp_path / "cache"
    args = ["rank", task_dir, "--pool", "offline", "-m", "logme", "-o", out, "--param", f"cache_dir={cache}",
            "--param", "max_examples=60"]
    calls = load_counter
    r = cli(*args)
    assert r.code == 0, r.err
    assert cli("validate", out, "--pool", "offline").code == 0
    first = out.read_text()
    assert len(first.splitlines()) == 4 and len(calls) == 1  # four readings of one checkpoint: one load
    # second run: everything from the cache
    assert cli(*args).code == 0 and len(calls) == 1 and out.read_text() == first
    # corrupt one cache file and drop the stored scores (kept per candidate in scores.sqlite beside the features):
    # detected, recomputed (one model load), same run
    for f in cache.glob("scores.sqlite*"):
        f.unlink()
    victim = sorted(cache.rglob("*.feat"))[0]
    data = bytearray(victim.read_bytes())
    data[-3] ^= 0x5A
    victim.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        r = cli(*args)
    assert r.code == 0 and len(calls) == 2 and "is corrupt (checksum mismatch)" in caplog.text
    assert out.read_text() == first
