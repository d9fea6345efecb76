"""Issue #22: the organisers' ResNet-50 baseline as a rank-style method (its steps, on a tiny backbone)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from modelseek import validate_run
from modelseek.style.baseline import FineTune, build_backbone, finetune_scores
from modelseek.style.pipeline import FeatureBank, parse_method
from modelseek.style.synthetic import write_organiser_layout, write_organiser_sources

TINY = "tiny-finetune@weights=random,size=16,epochs=3,batch=8,lr=0.01"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("bl-src")
    listing, train, models = write_organiser_sources(src, n_models=3, train_contents=(1, 2, 3, 4),
                                                     test_contents=(5,))
    root = tmp_path_factory.mktemp("bl") / "repo"
    write_organiser_layout(root, listing, train, models, size=16, render=16, grain=0)
    return root


def test_the_default_steps_are_the_organisers():
    """Their notebook: ResNet-50 IMAGENET1K_V2, dropout 0.2 + linear head, 224 px, Adam lr 1e-4, 5 epochs,
    batch 256, seed 42."""
    spec = parse_method("resnet50-finetune")
    assert spec.finetune == FineTune(arch="resnet50", weights="imagenet", epochs=5, batch=256, lr=1e-4, dropout=0.2,
                                     size=224, seed=42, frozen=False)
    assert spec.all_features() == []
    cpu = parse_method("resnet50-finetune@frozen,epochs=2").finetune
    assert cpu.frozen is True and cpu.epochs == 2 and cpu.lr == 1e-4


@pytest.mark.slow(reason="12 s (setup and call) on 2 busy cores")
def test_resnet50_head_is_replaced_by_dropout_and_linear(repo):
    """The real architecture (random weights): its 2048-d pooled features feed Dropout(0.2) + Linear(2048, n)."""
    torch = pytest.importorskip("torch")
    from modelseek.style.baseline import _head

    net = build_backbone(FineTune(weights="random"))
    assert net.fc.in_features == 2048
    net.fc = _head(net.fc.in_features, 85, 0.2)
    assert isinstance(net.fc[0], torch.nn.Dropout) and net.fc[0].p == 0.2
    assert tuple(net.fc[1].weight.shape) == (85, 2048)
    with torch.no_grad():
        assert tuple(net.eval()(torch.zeros(1, 3, 64, 64)).shape) == (1, 85)


def test_imagenet_weights_offline_are_one_located_line(cli, repo, tmp_path):
    import torch

    if os.path.isfile(os.path.join(torch.hub.get_dir(), "checkpoints", "resnet50-11ad3fa6.pth")):
        pytest.skip("the IMAGENET1K_V2 weights are in torch's cache on this machine")
    out = tmp_path / "run.txt"
    r = cli("rank-style", repo, "-m", "resnet50-finetune", "-o", out)
    assert r.code == 1 and "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert r.err.startswith("error: field 'weights': model 'resnet50': pretrained weights "
                            "ResNet50_Weights.IMAGENET1K_V2 cannot be fetched: offline") and not out.exists()


@pytest.mark.parametrize("bad,msg", [("resnet50-finetune@epoch=2", "unknown key 'epoch' (did you mean 'epochs'?)"),
                                     ("resnet50-finetune@epochs=0", "must be an integer in [1, 1000], got 0"),
                                     ("resnet50-finetune@weights=laion", "must be imagenet or random"),
                                     ("resnet5O-finetune@weights=random", "unknown torchvision architecture"),
                                     ("tiny-finetune", "the tiny network has no ImageNet weights")])
def test_bad_options_are_usage_errors(cli, repo, bad, msg):
    r = cli("rank-style", repo, "-m", bad, "--size", 16)
    assert r.code == 1 and msg in r.err and len(r.err.strip().splitlines()) == 1, r.err


@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
def test_tiny_finetune_through_rank_style_is_seeded(cli, repo, tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    for out in (a, b):
        r = cli("rank-style", repo, "-m", TINY, TINY + ",frozen", "-o", out, "--json")
        assert r.code == 0, r.err
    assert a.read_text() == b.read_text()  # seed 42 by default: the same logits twice
    ids = sorted(p.name[:-4] for p in (repo / "data" / "test").glob("*.png"))
    runs = validate_run(a, topics=ids, docs=["1", "2", "3"], subtask="B")
    assert len(runs) == 2 and all(len(run) == 3 for run in runs.values())
    r = cli("rank-style", repo, "-m", TINY.replace("seed", "x") + ",seed=7", "-o", tmp_path / "c.txt")
    assert r.code == 0 and (tmp_path / "c.txt").read_text() != a.read_text().replace(",seed=7", "")


@pytest.mark.slow(reason="36 s (setup and call) on 2 busy cores")
def test_finetune_steps_learn_a_separable_set():
    """Three 'models' that paint solid red, green or blue: a few epochs of the baseline's steps (full network,
    and frozen backbone + head) rank the right model first for unseen images."""
    from modelseek.style.data import StyleDataset, StyleModels

    rng = np.random.default_rng(0)
    models = StyleModels(("1", "2", "3"), ("r", "g", "b"))

    def images(n):
        arrays, labels = [], []
        for k in range(n):
            m = k % 3
            img = rng.integers(0, 60, (16, 16, 3)).astype(np.uint8)
            img[..., m] += 150
            arrays.append(img)
            labels.append(str(m + 1))
        return arrays, labels

    tr, ytr = images(30)
    te, yte = images(9)
    train = FeatureBank(StyleDataset([f"a{i}" for i in range(30)], models, arrays=tr, labels=ytr), size=16)
    test = FeatureBank(StyleDataset([f"b{i}" for i in range(9)], models, arrays=te), size=16)
    for frozen, epochs in ((False, 30), (True, 200)):
        cfg = FineTune(arch="tiny", weights="random", size=16, epochs=epochs, batch=10, lr=0.01, frozen=frozen)
        s = finetune_scores(cfg, train, range(30), test, range(9), ytr, models.ids)
        assert s.shape == (9, 3) and np.isfinite(s).all()
        assert [models.ids[j] for j in s.argmax(axis=1)] == yte, (frozen, s)


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_bench_style_runs_the_baseline(cli, repo, tmp_path):
    r = cli("bench-style", repo, "--folds", 2, "-m", TINY, "hist-centroid", "--size", 16, "--json",
            "--run-out", tmp_path / "cv.txt")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert set(out["mrr"]) == {TINY, "hist-centroid"} and all(0 < v <= 1 for v in out["mrr"].values())
    assert len(validate_run(tmp_path / "cv.txt", subtask="B")) == 2
