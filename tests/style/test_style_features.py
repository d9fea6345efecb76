"""Style descriptors: known values, determinism under seeds, the per-image cache, registry encoders."""

from __future__ import annotations

import json

import numpy as np
import pytest

from modelseek.core.errors import InputError
from modelseek.style import StyleDataset, StyleModels
from modelseek.style.descriptors import extract, gram_upper, make_extractor, random_cnn


def _ds(arrays, labels=None):
    ids = [f"q{i}" for i in range(len(arrays))]
    labels = labels or ["1"] * len(arrays)
    return StyleDataset(ids, StyleModels(("1", "2"), ("a", "b")), arrays=list(arrays), labels=labels)


def _rand_images(n, size=32, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size, 3), dtype=np.uint8)


def test_hist_of_a_solid_colour_is_one_bin():
    img = np.zeros((1, 8, 8, 3), np.uint8)
    img[..., 0], img[..., 1], img[..., 2] = 255, 40, 100
    h = make_extractor("hist")(img)
    assert h.shape == (1, 512) and h.sum() == pytest.approx(1.0)
    # bins of 32 levels: R 255 -> 7, G 40 -> 1, B 100 -> 3
    assert h[0, (7 * 8 + 1) * 8 + 3] == pytest.approx(1.0)


def test_colour_stats_of_grey_image():
    img = np.full((1, 8, 8, 3), 128, np.uint8)
    v = make_extractor("colour")(img)[0]
    assert v[:7] == pytest.approx([128 / 255] * 3 + [0, 0, 0, 128 / 255], abs=1e-6)  # R, G, B, hue cos/sin, S, V
    assert v[7:14] == pytest.approx([0] * 7, abs=1e-9)  # no spread
    assert v[-1] == pytest.approx(0.0, abs=1e-9)  # grey has no colourfulness


def test_texture_autocorrelation_sees_pixel_blocks():
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (1, 8, 8, 3), dtype=np.uint8)
    blocky = np.repeat(np.repeat(small, 4, 1), 4, 2)  # 32 x 32, 4-pixel blocks
    noisy = rng.integers(0, 256, (1, 32, 32, 3), dtype=np.uint8)
    ext = make_extractor("texture")
    a, b = ext(blocky)[0], ext(noisy)[0]
    lag = 12  # first entry after the 4 x 3 band moments: autocorrelation of the finest band at (dy=0, dx=1)
    assert a[lag] > b[lag] + 0.3
    assert np.isfinite(a).all() and a.shape == b.shape


def test_gram_matches_hand_computation_and_is_seeded():
    import torch

    imgs = _rand_images(2, 16)
    ext = make_extractor("gram", seed=3, dims=10**6)  # no projection: the raw (power-normalised) Gram
    v = ext(imgs)
    x = (torch.from_numpy(imgs).permute(0, 3, 1, 2).float() / 255 - 0.45) / 0.25
    f = random_cnn(seed=3)(x)[0].numpy()  # first layer, 32 channels of 16 x 16
    F = f[1].reshape(32, -1)
    G = F @ F.T / F.shape[1]
    g = np.sign(G[np.triu_indices(32)]) * np.sqrt(np.abs(G[np.triu_indices(32)]))
    n = 32 * 33 // 2
    assert v[1, :n] == pytest.approx(g / np.linalg.norm(g), rel=1e-4, abs=1e-6)
    assert np.array_equal(v, make_extractor("gram", seed=3, dims=10**6)(imgs))
    assert not np.allclose(v, make_extractor("gram", seed=4, dims=10**6)(imgs))


def test_gram_projection_shape_and_unit_blocks():
    v = make_extractor("gram", dims=64)(_rand_images(3, 16))
    assert v.shape == (3, 4 * 64)  # 4 layers (528, 2080, 8256, 8256 Gram entries), each projected to 64
    norms = np.linalg.norm(v.reshape(3, 4, 64), axis=2)
    assert norms == pytest.approx(np.ones((3, 4)), rel=1e-5)


def test_gram_tokens_are_channels_by_channels():
    import torch

    t = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)  # N x T x C
    g = gram_upper(t)
    G = t[0].T @ t[0] / 3
    iu = np.triu_indices(4)
    assert g[0] == pytest.approx(np.sqrt(G.numpy()[iu]))


def test_extract_cache_reuses_and_recovers_from_corruption(tmp_path):
    ds = _ds(_rand_images(3, 16))
    calls = []

    class Counting:
        name = "hist"
        inner = make_extractor("hist")

        def key(self):
            return "counting"

        def config(self):
            return {}

        def __call__(self, images):
            calls.append(len(images))
            return self.inner(images)

    a = extract(ds, Counting(), size=16, cache=tmp_path)
    b = extract(ds, Counting(), size=16, cache=tmp_path)
    assert np.array_equal(a, b) and calls == [3]
    victim = sorted(tmp_path.rglob("*.feat"))[0]
    victim.write_bytes(victim.read_bytes()[:-8] + b"corrupt!")
    c = extract(ds, Counting(), size=16, cache=tmp_path)
    assert np.array_equal(a, c) and calls == [3, 1]


def test_extract_rejects_tiny_size():
    with pytest.raises(InputError, match="at least 8"):
        extract(_ds(_rand_images(1, 16)), make_extractor("hist"), size=4)


def test_unknown_feature_lists_valid_names():
    with pytest.raises(Exception, match="Valid names: .*gram"):
        make_extractor("grma")


def _registry(tmp_path, layer="features.1"):
    reg = tmp_path / "registry.json"
    reg.write_text(json.dumps([{"model_name": "tiny", "source": "custom", "layer": layer, "embedding": "pool",
                                "input_size": 32, "model_parameters": {"arch": "tiny_cnn", "seed": 0}}]))
    return reg


def test_registry_encoder_features(tmp_path):
    reg = _registry(tmp_path)
    imgs = _rand_images(2, 32)
    emb = make_extractor("enc:tiny", registry=reg)(imgs)
    assert emb.shape == (2, 8)  # tiny_cnn width 8: features.1 is the first ReLU
    g = make_extractor("encgram:tiny", registry=reg, dims=16)(imgs)
    assert g.shape == (2, 16) and np.linalg.norm(g, axis=1) == pytest.approx([1, 1])
    again = make_extractor("encgram:tiny", registry=reg, dims=16)(imgs)
    assert np.array_equal(g, again)


def test_registry_encoder_errors(tmp_path):
    reg = _registry(tmp_path)
    with pytest.raises(InputError, match="unknown model 'tinny'"):
        make_extractor("enc:tinny", registry=reg)
    with pytest.raises(InputError, match="needs a registry model name"):
        make_extractor("enc", registry=reg)
    with pytest.raises(InputError, match="takes no argument"):
        make_extractor("gram:tiny")
    flat = make_extractor("encgram:tiny", registry=_registry(tmp_path, layer="fc"))
    with pytest.raises(InputError, match="needs spatial maps or tokens"):
        flat(_rand_images(1, 32))


def _entry_registry(tmp_path, entry):
    reg = tmp_path / "reg.json"
    reg.write_text(json.dumps([entry]))
    return reg


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_random_init_transformers_architecture_gram(tmp_path):
    """A random-init Hugging Face ResNet (built from its config, seeded, offline) as a Gram backbone."""
    reg = _entry_registry(tmp_path, {
        "model_name": "hf-resnet", "source": "transformers", "weights": None, "layer": "encoder.stages.0",
        "input_size": 32, "model_parameters": {"model_type": "resnet", "embedding_size": 8, "hidden_sizes": [8, 16],
                                               "depths": [1, 1], "seed": 0}})
    imgs = _rand_images(2, 32)
    g = make_extractor("encgram:hf-resnet", registry=reg, dims=32)(imgs)
    assert g.shape == (2, 32) and np.isfinite(g).all()
    assert np.array_equal(g, make_extractor("encgram:hf-resnet", registry=reg, dims=32)(imgs))


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_random_init_torchvision_architecture(tmp_path):
    """torchvision architectures with random weights through the registry; where torchvision cannot be
    imported (its compiled ops do not load beside every torch build) the error says so in one line."""
    reg = _entry_registry(tmp_path, {"model_name": "rn18", "source": "torchvision", "weights": None,
                                     "layer": "layer1", "input_size": 32, "model_parameters": {"arch": "resnet18"}})
    ext = make_extractor("encgram:rn18", registry=reg, dims=32)
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - ImportError or a broken binary build
        with pytest.raises(InputError, match="torchvision"):
            ext(_rand_images(1, 32))
        return
    g = ext(_rand_images(2, 32))
    assert g.shape == (2, 32) and np.isfinite(g).all()


def test_extractor_parameters_go_through_the_config_layer():
    from modelseek.style.descriptors import make_extractor

    assert make_extractor("colour", hue_bins="16").config()["hue_bins"] == 16
    with pytest.raises(InputError) as ei:
        make_extractor("hist", binz=4)
    assert ei.value.field == "hist.binz" and "did you mean 'bins'" in ei.value.message
    with pytest.raises(InputError, match=r"must be an integer in \[2, 64\], got 1"):
        make_extractor("hist", bins=1)
    with pytest.raises(InputError, match="positive integers"):
        make_extractor("gram", channels=[8, 0])
