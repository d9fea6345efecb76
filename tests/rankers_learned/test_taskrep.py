"""Task representations: known meta-feature values, shapes, caching (hit, corruption), bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from modelseek.retrieval.data.task import Split, Task
from modelseek.core.errors import InputError
from modelseek.retrieval.taskrep import META_FEATURES, meta_features, represent, sample_indices
from modelseek.testing import make_text_task


def _task(texts, labels, tid="t"):
    return Task(id=tid, train=Split(tuple(texts), tuple(labels)), val=Split(("v",), (labels[0],)))


def test_meta_features_known_values():
    # 4 texts of 2, 4, 4, 2 words; classes a,a,b,b (balanced); label names 1 word each
    t = _task(["a b", "a b c d", "x y z w", "p q"], ["a", "a", "b", "b"])
    f = dict(zip(META_FEATURES, meta_features(t)))
    assert f["log2_classes"] == pytest.approx(1.0)
    assert f["log10_train"] == pytest.approx(math.log10(4))
    assert f["log1p_mean_words"] == pytest.approx(math.log1p(3.0))
    assert f["log1p_p50_words"] == pytest.approx(math.log1p(3.0))
    assert f["class_entropy"] == pytest.approx(1.0)
    assert f["log_imbalance"] == pytest.approx(0.0)
    # 12 tokens, distinct: a b c d x y z w p q = 10
    assert f["type_token_ratio"] == pytest.approx(10 / 12)
    assert f["non_ascii_frac"] == 0.0
    assert f["mean_label_words"] == 1.0


def test_imbalance_and_entropy():
    t = _task(["x"] * 3 + ["y"], ["a", "a", "a", "b"])
    f = dict(zip(META_FEATURES, meta_features(t)))
    p = np.array([0.75, 0.25])
    assert f["class_entropy"] == pytest.approx(float(-(p * np.log(p)).sum() / np.log(2)))
    assert f["log_imbalance"] == pytest.approx(math.log(3))


def test_represent_shapes_and_prototypes(tmp_path):
    task = make_text_task("r", n_classes=3, n_train=60, seed=1)
    rep = represent(task, "hashing", max_texts=1000, cache_dir=tmp_path)
    assert rep.prototypes.shape == (3, 256) and rep.label_emb.shape == (3, 256) and rep.mean.shape == (256,)
    assert rep.class_counts.tolist() == [20, 20, 20]
    # with every text used and balanced classes, the mean embedding is the mean of the prototypes
    np.testing.assert_allclose(rep.mean, rep.prototypes.mean(axis=0), atol=1e-6)


def test_cache_hit_and_corrupt_file_recomputed(tmp_path):
    import modelseek.retrieval.taskrep as tr

    task = make_text_task("c", n_classes=2, seed=2)
    rep = represent(task, "hashing", cache_dir=tmp_path)
    files = list(tmp_path.glob("*.arrays"))
    assert len(files) == 1
    tr._MEMORY.clear()
    again = represent(task, "hashing", cache_dir=tmp_path)
    np.testing.assert_array_equal(again.prototypes, rep.prototypes)
    files[0].write_bytes(files[0].read_bytes()[:100])  # truncate: a corrupt cache
    tr._MEMORY.clear()
    fixed = represent(task, "hashing", cache_dir=tmp_path)
    np.testing.assert_allclose(fixed.prototypes, rep.prototypes)
    assert tr.read_arrays(files[0]) is not None  # rewritten, verifies again


def test_sample_indices_stratified_and_seeded():
    labels = ["a"] * 90 + ["b"] * 10
    idx = sample_indices(labels, 20, seed=0)
    assert len(idx) == 20 and np.all(np.diff(idx) > 0)
    assert sum(labels[i] == "b" for i in idx) == 2
    np.testing.assert_array_equal(idx, sample_indices(labels, 20, seed=0))


def test_single_class_and_empty_text_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="single class"):
        represent(_task(["x", "y"], ["a", "a"]), "hashing", cache_dir=None)
    with pytest.raises(InputError, match="text #2 is empty"):
        represent(_task(["x", "  "], ["a", "b"]), "hashing", cache_dir=None)
