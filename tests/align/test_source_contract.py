"""The model-source contract: every registered source honours :class:`ModelSource`, and a source added from
outside the package (here, from this test file) works end to end through the CLI and the API with no other
change: the registry is the list of sources."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from modelseek.align.formats import ModelEntry
from modelseek.retrieval.vision.sources import SOURCES, get_source
from modelseek.retrieval.vision.sources.base import LoadedModel, ModelSource, Spec, seeded
from modelseek.core.errors import InputError

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", SOURCES.names())
def test_every_registered_source_honours_the_contract(name):
    cls = SOURCES.get(name)
    assert inspect.isclass(cls) and issubclass(cls, ModelSource)
    assert not inspect.isabstract(cls), f"{cls.__name__} leaves {sorted(cls.__abstractmethods__)} unimplemented"
    assert cls.name == name  # the name errors and install hints use is the one entries give
    assert cls.package and isinstance(cls.extra, str) and cls.extra
    assert list(inspect.signature(cls.build).parameters) == ["self", "entry", "spec"]
    assert list(inspect.signature(cls.defaults).parameters) == ["self", "entry"]
    src = get_source(name)
    assert isinstance(src, cls)
    # a registry entry naming the source is valid (the registry, not an enum, decides)
    assert ModelEntry.from_dict({"model_name": "m", "source": name.upper() + " "}).source == name


def test_a_source_without_build_cannot_be_instantiated():
    class Half(ModelSource):
        name = "half"
        package = "torch"

    with pytest.raises(TypeError, match="build"):
        Half()


# ------------------------------------------------------------------------------------------ a throwaway source
class _Projector(torch.nn.Module):
    """Mean colour per 4x4 cell, then a fixed random projection: a tiny, seeded image model."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.cells = torch.nn.AdaptiveAvgPool2d(4)
        self.proj = torch.nn.Linear(48, width)

    def forward(self, x):
        return self.proj(self.cells(x).flatten(1))


class ThrowawaySource(ModelSource):
    name = "throwaway"
    package = "torch"

    def build(self, entry, spec: Spec) -> LoadedModel:
        module = seeded(lambda: _Projector(int(spec.params.get("width", 8))), spec.seed)
        return LoadedModel(entry, module, self.std_call(module, spec), None, weights_note=f"seed {spec.seed}")

    def defaults(self, entry) -> dict:
        return {"input_size": (16, 16)}


@pytest.fixture
def throwaway(monkeypatch):
    assert "throwaway" not in SOURCES
    monkeypatch.setitem(SOURCES._items, "throwaway", ThrowawaySource)  # removed again after the test
    yield ThrowawaySource


def _entry(name, seed, width=8):
    return {"model_name": name, "source": "throwaway", "layer": "output", "embedding": "flatten",
            "model_parameters": {"seed": seed, "width": width}}


def test_unregistered_source_is_refused_with_the_registered_names():
    with pytest.raises(InputError, match="unknown model source 'throwaway'.*valid values: custom"):
        ModelEntry.from_dict(_entry("a", 0))


def test_throwaway_source_end_to_end(throwaway, cli, align_setup, tmp_path):
    test_every_registered_source_honours_the_contract("throwaway")
    reg = tmp_path / "throwaway.json"
    reg.write_text(json.dumps([_entry("t0", 0), _entry("t1", 1), _entry("t0b", 0, width=8)]))
    r = cli("align", "matrix", "--registry", reg, "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    C = np.array(d["cka_matrix"])
    assert d["models"] == ["t0", "t1", "t0b"] and C.shape == (3, 3)
    assert np.allclose(np.diag(C), 1.0)
    assert C[0, 2] == pytest.approx(1.0)  # same seed, same model: identical embeddings
    assert 0.0 < C[0, 1] < 0.9999          # another seed: another model
    assert ("t0", "t0b") in {(p["a"], p["b"]) for p in d["near_duplicates"]}

    # the same through the API: embeddings from the throwaway source, then their CKA
    from modelseek.align import cka, embed_catalog
    from modelseek.align.formats import ModelRegistry, StimulusCatalog

    registry = ModelRegistry.load(reg)
    catalog = StimulusCatalog.load(align_setup["catalog"])
    feats = embed_catalog(registry.get("t0"), catalog)
    assert feats.shape == (len(catalog), 8) and np.all(np.isfinite(feats))
    assert cka(feats, embed_catalog(registry.get("t1"), catalog)) == pytest.approx(C[0, 1], abs=1e-6)
