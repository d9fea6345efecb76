"""The one cache policy (where) and the one verified format (what) of modelseek.core.cache."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from modelseek.core.cache import CorruptCacheError, cache_dir, cache_root, decode_arrays, encode_arrays, load_arrays
from modelseek.retrieval.features.cache import default_cache_dir as features_dir
from modelseek.retrieval.taskrep import default_cache_dir as taskrep_dir


def test_cache_root_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("MODELSEEK_CACHE", str(tmp_path / "m"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_root() == tmp_path / "m"
    monkeypatch.delenv("MODELSEEK_CACHE")
    assert cache_root() == tmp_path / "x" / "modelseek"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert cache_root() == Path.home() / ".cache" / "modelseek"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == Path.home() / ".cache" / "modelseek"
    assert features_dir() == cache_dir("features") == cache_root() / "features"
    assert taskrep_dir() == cache_dir("taskrep")


arrays_st = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=4),
    hnp.arrays(st.sampled_from([np.float32, np.float64, np.int64, np.uint8, np.bool_]),
               hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)),
    max_size=3)
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@SETTINGS
@given(arrays_st, st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3), max_size=3))
def test_round_trip(arrays, fields):
    back = decode_arrays(encode_arrays(arrays, fields), fields)
    assert list(back) == list(arrays)
    for k in arrays:
        assert back[k].dtype == arrays[k].dtype and back[k].shape == arrays[k].shape
        np.testing.assert_array_equal(back[k], arrays[k])


@SETTINGS
@given(arrays_st.filter(lambda a: any(x.size for x in a.values())), st.data())
def test_any_damage_is_detected(arrays, data):
    blob = bytearray(encode_arrays(arrays, {"key": "k"}))
    how = data.draw(st.sampled_from(["flip", "truncate", "extend"]))
    if how == "flip":
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] ^= data.draw(st.integers(1, 255))
    elif how == "truncate":
        blob = blob[:data.draw(st.integers(0, len(blob) - 1))]
    else:
        blob += b"\0"
    try:
        back = decode_arrays(bytes(blob), {"key": "k"})
    except CorruptCacheError:
        return
    # a flip inside the JSON header can leave it meaning the same thing (e.g. whitespace); never other data
    assert list(back) == list(arrays) and all(np.array_equal(back[k], arrays[k]) for k in arrays)


def test_key_mismatch_and_load_removes_corrupt_files(tmp_path, caplog):
    from modelseek.core.cache import write_arrays

    p = write_arrays(tmp_path / "a" / "x.arrays", {"m": np.arange(6.0).reshape(2, 3)}, {"key": "one"})
    with pytest.raises(CorruptCacheError, match="key mismatch"):
        decode_arrays(p.read_bytes(), {"key": "two"})
    assert load_arrays(p, {"key": "one"})["m"].shape == (2, 3)
    p.write_bytes(p.read_bytes()[:-1] + b"!")
    with caplog.at_level(logging.WARNING):
        assert load_arrays(p, {"key": "one"}, what="test cache") is None
    assert "test cache file" in caplog.text and "checksum mismatch" in caplog.text and not p.exists()
    assert load_arrays(tmp_path / "missing.arrays") is None and load_arrays(None) is None
