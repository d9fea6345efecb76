"""The organisers' 20 candidate kinds (issue #48 items 5, 6, 8): their real config classes, heads and tokenizer kinds
with tiny random weights (:mod:`modelseek.testing.candidate_kinds`), through ``rank`` with every estimator and through
``finetune``; transformers' load reports summarised in one line; fine-tuning's head policy; damaged snapshots named
for what they are."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest

from modelseek.retrieval.estimators import ESTIMATORS
from modelseek.testing import make_text_task
from modelseek.testing.candidate_kinds import KINDS, WITH_HEAD, make_candidate_snapshot, write_candidate_pool


def _write_tasks(root: Path) -> Path:
    for i, n_classes in enumerate((3, 2)):
        task = make_text_task(f"k{n_classes}", n_classes=n_classes, n_train=24, n_val=9, n_test=9, seed=40 + i)
        folder = root / f"k{n_classes}"
        folder.mkdir(parents=True)
        for name in ("train", "val", "test"):
            sp = getattr(task, name)
            with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as fh:
                for text, y in zip(sp.texts, sp.labels):
                    fh.write(json.dumps({"text": text, "labels": y}) + "\n")
    return root


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    root = tmp_path_factory.mktemp("kinds")
    return root, write_candidate_pool(root / "pool"), _write_tasks(root / "tasks")


def test_the_pool_has_the_candidates_real_kinds(kinds):
    root, _, _ = kinds
    got = {}
    for m in range(1, 21):
        cfg = json.loads((root / "pool" / "models" / f"{m:02d}" / "config.json").read_text())
        got[m] = (cfg["model_type"], (cfg.get("architectures") or ["-"])[0], cfg.get("max_position_embeddings"))
    assert {t for t, _, _ in got.values()} == {"bert", "roberta", "xlm-roberta", "distilbert", "albert", "deberta"}
    assert sorted(m for m, (_, a, _) in got.items() if a.endswith("ForSequenceClassification")) == list(WITH_HEAD) \
        == [2, 8, 12, 15, 17, 20]  # 6 of the 20 carry a classification head
    assert got[7][1] == "BertForQuestionAnswering" and got[16] == ("deberta", "-", 512)
    assert got[18][2] == 514 and got[5][2] == 512
    tok_files = {m: sorted(p.name for p in (root / "pool" / "models" / f"{m:02d}").iterdir()) for m in (3, 5, 16, 19)}
    assert all("tokenizer.json" in f for f in tok_files.values())


@pytest.mark.slow(reason="about 45 s on 2 busy cores: 20 tiny models, 11 estimators on 2 tasks, in a fresh process")
def test_rank_with_every_estimator_and_one_line_load_reports(kinds, cli_subprocess, tmp_path):
    root, pool, tasks = kinds
    methods = [m for m in ESTIMATORS.names() if m not in ("leep", "nce")]  # those two need a head: below
    r = cli_subprocess("-v", "rank", tasks, "--pool", pool, "-m", *methods, "--param",
                       f"cache_dir={tmp_path / 'c'}", "--json")
    assert r.code == 0, r.err[-3000:]
    out = json.loads(r.out)
    for m in methods:
        for task in ("k2", "k3"):
            assert sorted(int(row["doc"]) for row in out[m][task]) == list(range(1, 21)), (m, task)
    assert "LOAD REPORT" not in r.err and "UNEXPECTED" not in r.err and "| Status" not in r.err
    loads = [ln for ln in r.err.splitlines() if "modelseek.retrieval.features.loading" in ln]
    said = [re.search(r"model (\d+): loaded", ln).group(1) for ln in loads]
    # one line per model, though it encodes two tasks; the two saved without a head (14, 16) load exactly: no line
    assert sorted(said) == [f"{m:02d}" for m in range(1, 21) if m not in (14, 16)], loads
    roberta = next(ln for ln in loads if re.search(r"model 18: loaded", ln))
    assert "unused (lm_head)" in roberta and "new (pooler)" in roberta and "expected" in roberta
    assert not [ln for ln in r.err.splitlines() if ln.startswith("WARNING")]

    heads = cli_subprocess("rank", tasks, "--pool", pool, "-m", "leep", "nce", "--allow-failures",
                           "--param", f"cache_dir={tmp_path / 'c'}", "--json")
    assert heads.code == 0, heads.err[-3000:]
    ranked = json.loads(heads.out)
    for m in ("leep", "nce"):
        assert sorted(int(row["doc"]) for row in ranked[m]["k3"]) == list(WITH_HEAD)
    assert heads.err.count("carries no sequence-classification head") >= 14


@pytest.mark.slow(reason="about 5 s on 2 busy cores: 20 tiny models fine-tuned one epoch")
def test_finetune_all_twenty_with_a_fresh_head_said(kinds, cli, tmp_path, caplog):
    root, pool, tasks = kinds
    caplog.set_level(logging.INFO, logger="modelseek.retrieval.finetune.protocol")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("max_epochs: 1\npatience: 1\nlr: 0.001\ncpu_threads: 1\n")
    r = cli("finetune", "--pool", pool, "--tasks", tasks / "k3", "--out", tmp_path / "gt.csv", "--recipe", recipe)
    assert r.code == 0, r.err
    assert "20 done, 0 failed" in r.out
    assert "classification head: fresh" in r.out
    said = [rec.getMessage() for rec in caplog.records if "classification head" in rec.getMessage()]
    # the six checkpoints with a head: one line each; finbert's and cardiffnlp's heads are 3-way like the task
    assert len(said) == 6, said
    assert any(m.startswith("candidate 2: a fresh 3-way") and "own 3-way head is not used" in m for m in said)


def test_head_policy_fresh_drops_a_head_of_the_tasks_size_keep_keeps_it(kinds):
    import torch
    from safetensors.torch import load_file

    from modelseek.retrieval.finetune.protocol import ModelSpec, load_model

    root, _, _ = kinds
    folder = root / "pool" / "models" / "02"  # finbert stand-in: positive/negative/neutral
    saved = load_file(str(folder / "model.safetensors"))
    spec = ModelSpec("2", str(folder))
    labels = ["a", "b", "c"]
    with torch.random.fork_rng():
        torch.manual_seed(0)
        _, fresh = load_model(spec, labels)
        _, kept = load_model(spec, labels, "keep")
        _, wider = load_model(spec, labels + ["d"], "keep")
    assert not torch.equal(fresh.classifier.weight, saved["classifier.weight"])
    assert float(fresh.classifier.bias.detach().abs().sum()) == 0.0
    assert torch.equal(kept.classifier.weight, saved["classifier.weight"])
    assert kept.config.id2label == {0: "a", 1: "b", 2: "c"}  # relabelled with the task's classes
    assert wider.classifier.weight.shape[0] == 4
    with torch.random.fork_rng():  # a fresh head comes from the job's seed: the same seed, the same head
        torch.manual_seed(0)
        _, again = load_model(spec, labels)
    assert torch.equal(again.classifier.weight, fresh.classifier.weight)
    roberta = root / "pool" / "models" / "08"  # RoBERTa's head has a dense layer too: fresh as well
    rsaved = load_file(str(roberta / "model.safetensors"))
    _, rnet = load_model(ModelSpec("8", str(roberta)), labels + ["d"])
    assert not torch.equal(rnet.classifier.dense.weight, rsaved["classifier.dense.weight"])


def test_damaged_snapshots_are_named_for_what_they_are(kinds, cli, tmp_path, caplog):
    pytest.importorskip("transformers")
    import importlib.util

    root, _, tasks = kinds
    lfs = shutil.copytree(root / "pool" / "models" / "05", tmp_path / "lfs")
    (lfs / "model.safetensors").write_text("version https://git-lfs.github.com/spec/v1\n"
                                           "oid sha256:" + "0" * 64 + "\nsize 440473133\n")
    sp = make_candidate_snapshot(tmp_path / "sp", 3)
    (sp / "tokenizer.json").unlink()
    (sp / "spiece.model").write_bytes(b"\x0a\x0b not a real model")
    pool = tmp_path / "pool.yaml"
    pool.write_text(f"candidates:\n  - {{id: lfs, path: {lfs}}}\n  - {{id: sp, path: {sp}}}\n"
                    f"  - {{id: ok, path: {root / 'pool' / 'models' / '10'}}}\n")
    r = cli("rank", tasks / "k2", "--pool", pool, "-m", "logme", "--allow-failures",
            "--param", f"cache_dir={tmp_path / 'c'}")
    assert r.code == 0, r.err
    said = r.err + caplog.text  # the left-out candidates: a warning through logging
    assert "model.safetensors in" in said and "is an un-fetched git-lfs pointer" in said
    assert "header too large" not in said.lower() and "tiktoken" not in said
    if importlib.util.find_spec("sentencepiece") is None:
        assert "the sentencepiece package is not installed (pip install sentencepiece)" in said
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("max_epochs: 1\npatience: 1\ncpu_threads: 1\n")
    f = cli("finetune", "--pool", pool, "--tasks", tasks / "k2", "--out", tmp_path / "gt.csv", "--recipe", recipe)
    assert f.code == 1 and "1 done, 2 failed" in f.out
    assert "un-fetched git-lfs pointer" in f.err
    if importlib.util.find_spec("sentencepiece") is None:
        assert "sentencepiece package is not installed" in f.err


def test_every_kind_is_listed_once():
    assert sorted(KINDS) == list(range(1, 21))
    assert len({k.hf_id for k in KINDS.values()}) == 20


@pytest.mark.slow(reason="about 10 s on 2 busy cores: the organisers' layout with the 20 stand-ins, five runs")
def test_submission_on_the_organisers_layout_with_the_twenty_kinds(cli, tmp_path):
    from modelseek.testing.organisers import make_organisers_layout

    repo = make_organisers_layout(tmp_path / "repo", n_test=3, n_train_tasks=4, snapshots=(), wide_task=None)
    for m in range(1, 21):  # data/models/NN as download_models writes them: the candidates' own kinds
        make_candidate_snapshot(repo / "data" / "models" / f"{m:02d}", m)
    out = tmp_path / "runs"
    r = cli("submission", repo, "--out", out, "--team", "k")
    assert r.code == 0, r.err
    files = sorted(out.glob("*.txt"))
    assert [f.name for f in files] == sorted(f"k-{m}.txt" for m in ("default", "avgrank", "logme", "knn", "rrf"))
    ok = cli("validate", *files, "--official", repo)
    assert ok.code == 0 and "each ranking the 20 models for all 3 official test topics" in ok.out, ok.err
    assert str(tmp_path) not in (out / "METHODS.md").read_text()  # no local path in a shared document
