"""``tupate``'s two modes on a tiny BERT saved with ``save_pretrained`` (loaded by transformers' own code):
the published mode's prompt tuning at the input (gradients through every layer, a frozen encoder), task
matrices and their cache keys, end-to-end fit/rank/save/load, and mode selection (auto: approx on a CPU)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from modelseek.core.errors import InputError  # noqa: E402
from modelseek.retrieval.rankers import make  # noqa: E402
from modelseek.retrieval.rankers.tupate import FullPromptTuner, TuPaTERanker, resolve_mode  # noqa: E402

P = 4  # prompts in these tests (the paper: 20)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from modelseek.core.errors import ModelseekError
    from modelseek.testing.tiny_models import make_tiny_bert

    folder = tmp_path_factory.mktemp("tiny-bert")
    try:
        return make_tiny_bert(folder, hidden_size=32, num_layers=3)
    except ModelseekError:  # no offline MiniLM vocabulary (a bare GPU machine): a WordPiece one trained here
        from tokenizers import BertWordPieceTokenizer
        from transformers import BertConfig, BertModel, BertTokenizerFast

        from modelseek.testing import make_text_task

        wp = BertWordPieceTokenizer(lowercase=True)
        wp.train_from_iterator([*make_text_task("vocab", n_train=200).train.texts, "the cat sat on the mat"],
                               vocab_size=2000, show_progress=False)
        tok = BertTokenizerFast(tokenizer_object=wp._tokenizer, model_max_length=128)
        cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=128)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            BertModel(cfg).save_pretrained(folder)
        tok.save_pretrained(folder)
        return folder


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    from modelseek.testing import make_ntcir_layout

    return make_ntcir_layout(tmp_path_factory.mktemp("ntcir"), n_tasks=6, n_models=4, seed=0, n_train=24,
                             n_val=4, n_test=4)


@pytest.fixture(scope="module")
def data(layout):
    from modelseek.retrieval.data.loaders import load_ntcir_tasks
    from modelseek.retrieval.data.pool import load_pool
    from modelseek.retrieval.data.truth import GroundTruth

    return load_ntcir_tasks(layout), GroundTruth.from_csv(layout / "ground-truth.csv"), load_pool(layout / "models.csv")


@pytest.fixture(scope="module")
def tuner(tiny_bert):
    return FullPromptTuner(str(tiny_bert), n_prompts=P, epochs=1, batch_size=8, seed=0, device="cpu")


def _published(tiny_bert, cache, **kw):
    params = dict(mode="published", device="cpu", encoder_path=str(tiny_bert), n_prompts=P, pt_epochs=2,
                  pt_batch_size=8, epochs=20, cache_dir=str(cache))
    return make("tupate", **{**params, **kw})


def _prompt_grad(tuner, prompts, enc, hooks=None):
    prompts = prompts.clone().requires_grad_(True)
    h = tuner.forward(prompts, enc["input_ids"], enc["attention_mask"])
    # a loss on the [CLS] output only, as the classifier reads it (a fixed random readout: a plain sum of a
    # LayerNorm output with unit gain is constant)
    w = torch.from_numpy(np.random.default_rng(0).normal(size=h.shape[-1]).astype(np.float32))
    (h[:, P] @ w).sum().backward()
    return prompts.grad.clone()


@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
def test_prompt_gradients_flow_through_every_layer(tuner):
    enc = tuner.tokenize(["the cat sat on the mat", "a stock rose sharply today"])
    layers = tuner.model.encoder.layer
    seen = {}

    def keep(i):
        def hook(module, args, kwargs):
            h = args[0] if args else kwargs["hidden_states"]
            h.retain_grad()
            seen[i] = h

        return hook

    handles = [layer.register_forward_pre_hook(keep(i), with_kwargs=True) for i, layer in enumerate(layers)]
    try:
        grad = _prompt_grad(tuner, tuner.init, enc)
    finally:
        for h in handles:
            h.remove()
    assert sorted(seen) == list(range(len(layers))) == [0, 1, 2]
    for i, h in seen.items():
        # the input of every layer holds the prompts at positions 0..P-1, and the loss reaches them there
        assert h.shape[1] == P + enc["input_ids"].shape[1]
        g = h.grad[:, :P].abs().sum(dim=-1)
        assert (g > 0).all(), f"layer {i}: no gradient at a prompt position"
    assert grad.shape == (P, 32) and grad.abs().sum() > 0


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_prompt_gradient_depends_on_the_deepest_layer(tiny_bert):
    # two tuners on the same weights; perturbing only the last layer of one changes the prompts' gradient:
    # the gradient runs back through that layer (not only through a shortcut to the early ones)
    a = FullPromptTuner(str(tiny_bert), n_prompts=P, device="cpu")
    b = FullPromptTuner(str(tiny_bert), n_prompts=P, device="cpu")
    enc = a.tokenize(["dogs bark at night", "the movie was wonderful"])
    g0 = _prompt_grad(a, a.init, enc)
    np.testing.assert_array_equal(_prompt_grad(b, b.init, enc).numpy(), g0.numpy())
    with torch.no_grad():
        b.model.encoder.layer[-1].attention.self.key.weight.mul_(1.5)
    g1 = _prompt_grad(b, b.init, enc)
    assert not torch.allclose(g0, g1)


def test_text_tokens_attend_to_the_prompts(tuner):
    # attention both ways: the [CLS] output (a text position) changes with the prompts (a random change: the
    # embeddings' LayerNorm would cancel a constant shift)
    enc = tuner.tokenize(["hello world"])
    with torch.no_grad():
        h0 = tuner.forward(tuner.init, enc["input_ids"], enc["attention_mask"])[:, P]
        other = tuner.init + torch.from_numpy(np.random.default_rng(1).normal(size=tuner.init.shape).astype(np.float32))
        h1 = tuner.forward(other, enc["input_ids"], enc["attention_mask"])[:, P]
    assert not torch.allclose(h0, h1)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_encoder_weights_bitwise_unchanged_by_tuning(tuner, data):
    tasks = data[0]
    before = {k: v.clone() for k, v in tuner.model.state_dict().items()}
    mat = tuner.tune(tasks[0])
    after = tuner.model.state_dict()
    assert before.keys() == after.keys()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed == []
    assert all(not p.requires_grad for p in tuner.model.parameters())
    # the prompts themselves moved: the task matrix is the tuned prompts, P x H
    assert mat.shape == (P, 32) and mat.dtype == np.float32
    assert np.abs(mat - tuner.init.numpy()).max() > 1e-4


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_tuning_is_seeded(tiny_bert, data):
    task = data[0][1]
    a = FullPromptTuner(str(tiny_bert), n_prompts=P, epochs=1, batch_size=8, seed=3, device="cpu").tune(task)
    b = FullPromptTuner(str(tiny_bert), n_prompts=P, epochs=1, batch_size=8, seed=3, device="cpu").tune(task)
    c = FullPromptTuner(str(tiny_bert), n_prompts=P, epochs=1, batch_size=8, seed=4, device="cpu").tune(task)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_task_matrix_shape_and_cache_keys_per_mode(tiny_bert, data, tmp_path):
    task = data[0][0]
    pub = _published(tiny_bert, tmp_path, pt_epochs=1)
    approx = make("tupate", mode="approx", encoder_path=str(tiny_bert), n_prompts=P, pt_epochs=1,
                  cache_dir=str(tmp_path))
    assert pub.resolved_mode == "published" and approx.resolved_mode == "approx"
    m_pub, m_approx = pub.task_matrix(task), approx.task_matrix(task)
    assert m_pub.shape == m_approx.shape == (P, 32)
    p_pub, p_approx = pub.cache_path(task), approx.cache_path(task)
    assert p_pub != p_approx and p_pub.exists() and p_approx.exists()
    assert pub._tuner().key(task) != approx._tuner().key(task)
    # a hyper-parameter or another encoder is another key too
    assert _published(tiny_bert, tmp_path, pt_epochs=3).cache_path(task) != p_pub
    assert _published(tiny_bert, tmp_path, pt_max_length=16).cache_path(task) != p_pub
    # read back from the cache, without tuning again
    again = _published(tiny_bert, tmp_path, pt_epochs=1)
    again._tuner().tune = lambda *a, **k: pytest.fail("the cached matrix was tuned again")
    np.testing.assert_array_equal(again.task_matrix(task), m_pub)


@pytest.mark.slow(reason="18 s (setup and call) on 2 busy cores")
def test_published_fits_and_ranks_end_to_end(tiny_bert, data, tmp_path):
    tasks, truth, pool = data
    train_ids, held = truth.task_ids[:4], [tasks.get(t) for t in truth.task_ids[4:]]
    r = _published(tiny_bert, tmp_path / "cache").fit(tasks.subset(train_ids), truth.subset(train_ids), pool=pool)
    assert r.resolved_mode == "published"
    assert r.in_dim_ == 32 and isinstance(r.net_.proj, torch.nn.Identity)  # the P x H matrix read as it is
    scores = np.array([[r.rank(t, pool)[c.id] for c in pool] for t in held])
    assert scores.shape == (2, 4) and np.isfinite(scores).all()
    # trained on macro-F1 (the ground truth's f1), not on F1 / the task's best F1
    # (the output bias starts at the target's mean and 20 steps of lr 1e-3 move it by at most 0.02)
    sub = truth.subset(train_ids)
    f1, norm = sub.matrix("f1").to_numpy(float).mean(), sub.matrix("normalized_f1").to_numpy(float).mean()
    assert abs(f1 - norm) > 0.1
    assert abs(r.net_.mlp[-1].bias.item() - f1) < 0.03
    path = tmp_path / "tupate.json"
    r.save(path)
    doc = json.loads(path.read_text())
    assert doc["extra"]["mode"] == "published" and doc["params"]["mode"] == "published"
    loaded = TuPaTERanker.load(path, cache_dir=str(tmp_path / "cache"))
    assert loaded.resolved_mode == "published"
    np.testing.assert_allclose([[loaded.rank(t, pool)[c.id] for c in pool] for t in held], scores, rtol=1e-5,
                               atol=1e-6)
    # an artifact from before the modes existed (no mode recorded) is the CPU approximation
    for key in ("mode", "width"):
        doc["extra"].pop(key)
    doc["params"].update(mode="auto", width=32)  # such artifacts recorded their width as a parameter
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert TuPaTERanker.load(old, device="cpu").resolved_mode == "approx"


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_auto_is_approx_on_cpu_and_says_it_is_an_approximation(tiny_bert, data, tmp_path, caplog):
    assert resolve_mode("auto", "cpu") == "approx"
    assert resolve_mode("auto") == ("published" if torch.cuda.is_available() else "approx")
    assert resolve_mode("published", "cpu") == "published"
    r = make("tupate", device="cpu", encoder_path=str(tiny_bert), n_prompts=P, pt_epochs=1,
             cache_dir=str(tmp_path))
    assert r.mode == "auto" and r.resolved_mode == "approx"
    with caplog.at_level(logging.WARNING, logger="modelseek.retrieval.rankers.tupate"):
        mat = r.task_matrix(data[0][0])
    assert mat.shape == (P, 32)
    assert "CPU approximation" in caplog.text and "not the paper's full prompt tuning" in caplog.text
    assert "approximation" in r.describe() and "published" in r.describe()


def test_bad_mode_and_parameters_are_errors(tiny_bert, tmp_path):
    with pytest.raises(InputError, match="mode must be one of 'auto', 'published', 'approx'") as e:
        make("tupate", mode="fast")
    assert e.value.field == "mode"
    with pytest.raises(InputError, match="pt_max_texts must be an integer >= 0"):
        make("tupate", pt_max_texts=-1)
    r = _published(tiny_bert, tmp_path, pt_layers=2)
    with pytest.raises(InputError, match="pt_layers=2 applies to mode 'approx' only"):
        r.describe()


def test_published_default_encoder_uncached_offline_is_one_clear_error(monkeypatch):
    from modelseek.retrieval.features.text import in_hub_cache

    if in_hub_cache("bert-base-multilingual-uncased"):
        pytest.skip("bert-base-multilingual-uncased is in this machine's Hugging Face cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = make("tupate", mode="published", device="cpu")
    with pytest.raises(InputError, match="needs encoder 'bert-base-multilingual-uncased', which is not in the "
                                         "Hugging Face cache") as e:
        r.describe()
    assert e.value.field == "encoder_path"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the published mode's home)")
def test_published_on_cuda_end_to_end(tiny_bert, data, tmp_path):
    tasks, truth, pool = data
    assert resolve_mode("auto") == "published"
    tuner = FullPromptTuner(str(tiny_bert), n_prompts=P, epochs=2, batch_size=8, seed=0, device="cuda")
    assert tuner.device.type == "cuda" and tuner.init.device.type == "cuda"
    before = {k: v.clone() for k, v in tuner.model.state_dict().items()}
    mat = tuner.tune(tasks[0])
    assert all(torch.equal(before[k], v) for k, v in tuner.model.state_dict().items())
    assert mat.shape == (P, 32) and np.isfinite(mat).all()
    # the same seeded procedure on the CPU gives nearly the same matrix
    cpu = FullPromptTuner(str(tiny_bert), n_prompts=P, epochs=2, batch_size=8, seed=0, device="cpu").tune(tasks[0])
    np.testing.assert_allclose(mat, cpu, atol=5e-3)
    train_ids, held = truth.task_ids[:4], [tasks.get(t) for t in truth.task_ids[4:]]
    r = make("tupate", encoder_path=str(tiny_bert), n_prompts=P, pt_epochs=2, pt_batch_size=8, epochs=20,
             cache_dir=str(tmp_path)).fit(tasks.subset(train_ids), truth.subset(train_ids), pool=pool)
    assert r.resolved_mode == "published" and next(r.net_.parameters()).device.type == "cuda"
    scores = np.array([[r.rank(t, pool)[c.id] for c in pool] for t in held])
    assert scores.shape == (2, 4) and np.isfinite(scores).all()
    path = tmp_path / "tupate.json"
    r.save(path)
    loaded = TuPaTERanker.load(path, cache_dir=str(tmp_path))
    np.testing.assert_allclose([[loaded.rank(t, pool)[c.id] for c in pool] for t in held], scores, atol=1e-4)


@pytest.mark.slow(reason="7 s (setup and call) on 2 busy cores")
def test_cli_rejects_an_unknown_mode_in_one_line(cli, layout):
    r = cli("train-ranker", layout, "--method", "tupate", "-p", "mode=fast", "-o", layout / "never.json")
    assert r.code == 1
    assert "mode must be one of 'auto', 'published', 'approx', got 'fast'" in r.err
    assert len(r.err.strip().splitlines()) == 1 and not (layout / "never.json").exists()
