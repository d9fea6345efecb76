"""Issue #38 (item 2): plugins from outside the package. A throwaway distribution (a module and its
``.dist-info`` with ``entry_points.txt``, on the path of a fresh interpreter, as ``pip install`` leaves one) adds
an estimator (a plain function), a ranker and a fusion method, which run through the CLI like built-ins; a
plugin named as a built-in is refused with both origins named."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import modelseek
from modelseek.testing.cli import run_cli_subprocess
from modelseek.testing.plugins import install_distribution, plugin_env

PLUGIN = '''
import numpy as np

from modelseek.retrieval.fusion.methods import FusionMethod, ordered_sum
from modelseek.retrieval.rankers.base import Ranker


def class_gap(features, labels):
    """Distance between the first and last class means over the overall spread."""
    means = [features[labels == c].mean(0) for c in np.unique(labels)]
    return float(np.linalg.norm(means[0] - means[-1]) / (features.std() + 1e-12))


def broken(features, labels):
    return float("nan")


class ByNameLength(Ranker):
    """Shorter Hugging Face ids first (a ranker that needs neither text nor history)."""

    name = "by_name_length"
    needs_fit = False

    def rank(self, task, pool):
        return {c.id: -float(len(c.hf_id)) for c in pool}


def _combine(values, weights):
    return ordered_sum(np.sqrt(np.clip(np.where(np.isnan(values), 0.0, values), 0, None)))


from modelseek.retrieval.vision.sources import ModelSource
from modelseek.retrieval.metrics import Metric


class BestFirst(Metric):
    """1 when the first candidate is a best one (the top grade of the topic), else 0."""

    cutoff = "none"

    def per_list(self, ranking, j, k):
        top = max(j.grades.values(), default=0)
        return float(bool(ranking) and j.grades.get(ranking[0], 0) == top)


class EchoSource(ModelSource):
    """A model source of a library the package does not know."""

    name = "echo"
    package = "echo"
    extra = "echo"

    def build(self, entry, spec):
        raise NotImplementedError


ROOTSUM = FusionMethod("rootsum", "sum of square roots of normalised scores", uses_scores=True,
                       takes_weights=False, combine=_combine, search=lambda space: [])
'''


def _distribution(site: Path, entry_points: str, name: str = "ms_plugin_demo") -> Path:
    return install_distribution(site, name, {name: PLUGIN}, entry_points)


GOOD = """[modelseek.estimators]
class_gap = ms_plugin_demo:class_gap
broken_score = ms_plugin_demo:broken

[modelseek.rankers]
by_name_length = ms_plugin_demo:ByNameLength

[modelseek.fusion]
rootsum = ms_plugin_demo:ROOTSUM

[modelseek.sources]
echo = ms_plugin_demo:EchoSource

[modelseek.metrics]
best_first = ms_plugin_demo:BestFirst
"""


def _cli(site: Path, *args):
    return run_cli_subprocess(*args, env=plugin_env(site))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return _distribution(tmp_path_factory.mktemp("site"), GOOD)


@pytest.fixture(scope="module")
def task_and_pool(tmp_path_factory) -> tuple[Path, Path]:
    pytest.importorskip("transformers")
    from modelseek.testing import make_text_task, write_task_table
    from modelseek.testing.tiny_models import write_tiny_pool

    root = tmp_path_factory.mktemp("plugin-task")
    table = write_task_table(make_text_task("t1", 3, 60, 20, 20, seed=1), root / "task.csv")
    return table, write_tiny_pool(root, hf_ids=[f"tiny/bert-{'x' * i}" for i in (1, 2, 3)])


def test_plugins_are_listed_without_being_imported(site):
    code = ("import sys, modelseek.retrieval.estimators as e, modelseek.retrieval.rankers._registry as r, modelseek.retrieval.vision.sources as s; "
            "print('class_gap' in e.names(), 'by_name_length' in r.RANKERS.names(), 'echo' in s.SOURCES.names(), "
            "'ms_plugin_demo' in sys.modules, s.SOURCES.get('echo').__name__)")
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **plugin_env(site)})
    assert out.stdout.split() == ["True", "True", "True", "False", "EchoSource"], out.stderr


@pytest.mark.slow(reason="two fresh interpreters that load torch and three tiny BERTs (about 8 s)")
def test_a_plugin_estimator_function_ranks_through_the_cli(site, task_and_pool, tmp_path):
    table, pool = task_and_pool
    out = tmp_path / "run.txt"
    r = _cli(site, "rank", table, "-m", "class_gap", "--pool", pool, "-o", out, "--json")
    assert r.code == 0, r.err
    (ranking,) = json.loads(r.out)["class_gap"].values()  # the one task of the table file
    scores = {e["doc"]: e["score"] for e in ranking}
    assert sorted(scores) == ["1", "2", "3"] and len(set(scores.values())) == 3  # three distinct finite scores
    # the registration's checks wrap the plain function: a non-finite result is a located error, not a score
    r = _cli(site, "rank", table, "-m", "broken_score", "--pool", pool, "-o", tmp_path / "b.txt")
    assert r.code == 1 and "broken_score: the estimator returned nan" in r.err


@pytest.mark.slow(reason="four fresh interpreters (about 3 s)")
def test_a_plugin_ranker_and_fusion_method_run_and_evaluate(site, tmp_path):
    from modelseek.testing import make_ntcir_layout

    layout = make_ntcir_layout(tmp_path / "ntcir", n_tasks=6, n_models=4, seed=2)
    a, b, fused = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "fused.txt"
    r = _cli(site, "rank", layout, "-m", "by_name_length", "-o", a, "--show", "0")
    assert r.code == 0, r.err
    assert _cli(site, "rank", layout, "-m", "avgrank", "--cv", "3", "-o", b, "--show", "0").code == 0
    r = _cli(site, "fuse", a, b, "--method", "rootsum", "-o", fused)
    assert r.code == 0, r.err
    r = _cli(site, "evaluate", fused, "-g", layout / "ground-truth.csv", "--json", "--metrics", "ndcg@5,best_first")
    assert r.code == 0, r.err
    (report,) = json.loads(r.out).values()
    assert 0 <= report["mean"]["best_first"] <= 1 and 0 < report["mean"]["ndcg@5"] <= 1
    assert len(report["per_topic"]) == 6 and all(t["best_first"] in (0.0, 1.0) for t in report["per_topic"].values())
    # every candidate of every topic, in the order the plugin's formula gives (the equal-length ids tie)
    lines = fused.read_text().splitlines()
    assert len(lines) == 6 * 4


def test_a_plugin_named_as_a_built_in_is_refused_naming_both(tmp_path):
    site = _distribution(tmp_path / "site", "[modelseek.estimators]\nlogme = ms_plugin_demo:class_gap\n")
    r = _cli(site, "rank", tmp_path, "-m", "logme")
    assert r.code == 1
    assert "estimator 'logme'" in r.err and "'ms_plugin_demo:class_gap'" in r.err and "ms_plugin_demo" in r.err
    assert "modelseek.retrieval.estimators.logme" in r.err


def test_a_plugin_of_the_wrong_kind_is_named(tmp_path):
    site = _distribution(tmp_path / "site", "[modelseek.rankers]\nclass_gap = ms_plugin_demo:class_gap\n")
    r = _cli(site, "rank", tmp_path, "-m", "class_gap")
    assert r.code == 1 and "a ranker is a Ranker subclass" in r.err and "ms_plugin_demo" in r.err


# ------------------------------------------------------------------------------------------ issue #45: isolation
BAD = '''
import numpy as np

from modelseek.retrieval.fusion.methods import FusionMethod, ordered_sum
from modelseek.retrieval.metrics import Metric


def _combine(values, weights):
    return ordered_sum(np.where(np.isnan(values), 0.0, values))


RRF = FusionMethod("rrf", "a second rrf", uses_scores=True, takes_weights=False, combine=_combine,
                   search=lambda space: [])


def avgrank(features, labels):
    return 0.0


class WrongRun:
    name, in_process, concurrency = "wrongrun", True, "serial"

    def run(self, units):
        pass


class NoPerList(Metric):
    cutoff = "none"
'''

BAD_ENTRY_POINTS = """[modelseek.fusion]
broken_fusion = ms_bad_broken:THING
rrf = ms_bad:RRF

[modelseek.estimators]
avgrank = ms_bad:avgrank

[modelseek.executors]
wrongrun = ms_bad:WrongRun

[modelseek.metrics]
noperlist = ms_bad:NoPerList
"""

GOOD_EXTRA = '''
from sklearn.linear_model import Ridge

from modelseek.style.retrievers import Retriever, _unit

#: any scikit-learn regressor is a meta-model (cloned per fit)
RIDGE = Ridge(alpha=10.0)


class Farthest(Retriever):
    """A model's score is minus the cosine distance to its farthest training image."""

    name = "farthest"

    def _fit(self, Z, y):
        self.train_, self.y_ = _unit(Z), y

    def _scores(self, Z):
        sims = _unit(Z) @ self.train_.T
        return __import__("numpy").stack([sims[:, self.y_ == m].min(1) for m in self.seen_], axis=1)
'''


def _bad_distribution(site: Path) -> Path:
    return install_distribution(site, "ms-bad", {"ms_bad": BAD, "ms_bad_broken": "import this_module_does_not_exist\n"},
                                BAD_ENTRY_POINTS)


def _one_line_error(r, *needles: str) -> None:
    from modelseek.testing.cli import assert_one_error_line

    assert "Traceback" not in r.out
    assert_one_error_line(r, *needles)


@pytest.mark.slow(reason="thirteen fresh interpreters (about 25 s)")
def test_a_broken_distribution_fails_only_the_commands_that_use_its_members(tmp_path):
    from modelseek.testing import make_ntcir_layout

    site = _bad_distribution(tmp_path / "site")
    layout = make_ntcir_layout(tmp_path / "ntcir", n_tasks=6, n_models=4, seed=2)
    run, truth = tmp_path / "run.txt", layout / "ground-truth.csv"
    # every command, --help included, works
    for args in (("--help",), ("fuse", "--help"), ("eevee", "search", "--help"), ("finetune", "--help"),
                 ("rank", layout, "-m", "random", "-o", run, "--show", "0"),
                 ("eevee", "search", "--ground-truth", truth, "-k", "2", "--generations", "1", "--population", "5",
                  "--workers", "1", "--json"),
                 ("evaluate", run, "-g", truth, "--json")):
        r = _cli(site, *args)
        assert r.code == 0 and "Traceback" not in r.err, (args, r.err)
    assert "rrf" in _cli(site, "fuse", "--help").out  # listed by name, without importing the plugin
    # using a bad member: one line naming its entry point and distribution
    _one_line_error(_cli(site, "fuse", run, run, "--method", "broken_fusion", "-o", tmp_path / "f.txt"),
                    "'ms_bad_broken:THING'", "'ms-bad'", "No module named 'this_module_does_not_exist'")
    _one_line_error(_cli(site, "fuse", run, run, "--method", "rrf", "-o", tmp_path / "f.txt"),
                    "'ms_bad:RRF'", "'ms-bad'", "clashes with the built-in fusion method", "fusion.methods.rrf")
    _one_line_error(_cli(site, "rank", layout, "-m", "avgrank", "-o", tmp_path / "a.txt"),
                    "'ms_bad:avgrank'", "'ms-bad'", "clashes with the built-in method", "rankers.avgrank")
    _one_line_error(_cli(site, "rank", layout, "-m", "logme", "--executor", "wrongrun", "-o", tmp_path / "w.txt"),
                    "'ms_bad:WrongRun'", "'ms-bad'", "WrongRun.run must take (units, on_start, on_done)")
    _one_line_error(_cli(site, "evaluate", run, "-g", truth, "--metrics", "ndcg@5,noperlist"),
                    "'ms_bad:NoPerList'", "'ms-bad'", "does not implement per_list")
    # modelseek plugins: every kind's members with their origin, and why a broken one cannot be used
    r = _cli(site, "plugins", "--json")
    assert r.code == 0, r.err
    kinds = {k["kind"]: k for k in json.loads(r.out)["kinds"]}
    assert len(kinds) == 10 and {k["group"] for k in kinds.values()} >= {"modelseek.meta_models",
                                                                         "modelseek.style_retrievers"}
    broken = {(k, m["name"]): m["broken"] for k, v in kinds.items() for m in v["members"] if m["broken"]}
    assert sorted(broken) == [("estimator", "avgrank"), ("executor", "wrongrun"), ("fusion method", "broken_fusion"),
                              ("fusion method", "rrf"), ("metric", "noperlist")]
    assert all("'ms-bad'" in why for why in broken.values())
    origins = {(k, m["name"]): m["origin"] for k, v in kinds.items() for m in v["members"]}
    assert origins[("fusion method", "combsum")] == "built-in" and origins[("metric", "ndcg")] == "built-in"


@pytest.mark.slow(reason="three fresh interpreters, one EEVEE search (about 5 s)")
def test_a_meta_model_plugin_named_as_a_built_in_fails_only_when_named(tmp_path):
    """A meta-model entry point named ``mlp`` (the default's name): ``eevee search --help`` still lists the
    built-ins with their parameters; naming ``mlp`` is one line naming the distribution; ``ridge`` still runs."""
    from modelseek.testing import make_ntcir_layout

    site = _distribution(tmp_path / "site", "[modelseek.meta_models]\nmlp = ms_plugin_demo:class_gap\n",
                         name="ms_plugin_demo")
    truth = make_ntcir_layout(tmp_path / "ntcir", n_tasks=6, n_models=4, seed=2) / "ground-truth.csv"
    r = _cli(site, "eevee", "search", "--help")
    assert r.code == 0 and "Traceback" not in r.err, r.err
    assert "from the distribution ms_plugin_demo" in " ".join(r.out.split()) and "alphas=" in r.out
    search = ("eevee", "search", "--ground-truth", truth, "-k", "2", "--generations", "1", "--population", "5",
              "--workers", "1", "--json")
    _one_line_error(_cli(site, *search, "--meta-model", "mlp"), "'ms_plugin_demo:class_gap'", "'ms_plugin_demo'",
                    "clashes with the built-in meta-model")
    r = _cli(site, *search, "--meta-model", "ridge")
    assert r.code == 0 and json.loads(r.out)["meta_model"] == "ridge", r.err


@pytest.mark.slow(reason="four fresh interpreters, two EEVEE searches (about 12 s)")
def test_a_meta_model_and_a_style_retriever_from_a_distribution_run_through_the_cli(tmp_path):
    from modelseek.testing import make_ntcir_layout
    from modelseek.testing.style import make_b_layout

    site = install_distribution(tmp_path / "site", "ms-more", {"ms_more": GOOD_EXTRA},
                                {"modelseek.meta_models": {"skridge": "ms_more:RIDGE"},
                                 "modelseek.style_retrievers": {"farthest": "ms_more:Farthest"}})
    layout = make_ntcir_layout(tmp_path / "ntcir", n_tasks=6, n_models=8, seed=3)
    args = ("eevee", "search", "--ground-truth", layout / "ground-truth.csv", "-k", "2", "--generations", "1",
            "--population", "6", "--workers", "1", "--json")
    r = _cli(site, *args, "--meta-model", "skridge")
    assert r.code == 0, r.err
    plugin = {tuple(t["benchmarks"]): t["score"] for t in json.loads(r.out)["top"]}
    r = _cli(site, *args, "--meta-model", "ridge")
    assert r.code == 0, r.err
    builtin = {tuple(t["benchmarks"]): t["score"] for t in json.loads(r.out)["top"]}
    common = set(plugin) & set(builtin)
    assert plugin and all(0 < v < float("inf") for v in plugin.values())
    # a fixed alpha of 10 is not the built-in's leave-one-out choice: the plugin's own fits scored the subsets
    assert common and any(abs(plugin[c] - builtin[c]) > 1e-9 for c in common)
    h = _cli(site, "eevee", "search", "--help")
    assert "skridge: from the distribution ms-more" in " ".join(h.out.split())
    b = make_b_layout(tmp_path / "subtask-b")
    out = tmp_path / "style.txt"
    r = _cli(site, "rank-style", b, "-o", out, "--size", 32, "-m", "hist-farthest")
    assert r.code == 0, r.err
    lines = out.read_text().split("\n")
    assert lines[0].split()[5] == "hist-farthest" and len({ln.split()[0] for ln in lines if ln}) >= 2


def test_check_member_is_the_registration_check():
    from modelseek.retrieval.fusion.methods import FUSION_METHODS, FusionMethod
    from modelseek.testing import check_member

    rrf = FUSION_METHODS.get("rrf")
    assert check_member("fusion method", rrf) is rrf
    bad = FusionMethod("twoargs", "x", uses_scores=True, takes_weights=False, combine=lambda values: values,
                       search=lambda space: [])
    with pytest.raises(TypeError, match=r"combine must take \(values, weights\)"):
        check_member("fusion method", bad)
    with pytest.raises(TypeError, match="own name is 'rrf'"):
        check_member("fusion method", rrf, name="twoargs")
    with pytest.raises(TypeError, match="does not implement per_list"):
        from modelseek.retrieval.metrics import Metric

        check_member("metric", type("NoPerList", (Metric,), {}), name="x")
    with pytest.raises(Exception, match="unknown kind 'fusion'"):
        check_member("fusion", rrf)


def test_check_member_calls_the_member_and_refuses_what_breaks_the_behaviour():
    """Issue #56 (item 4): the shipped check calls the member on generated data: a combine returning a string, an
    estimator returning a string, a combine that depends on the order of the runs, an unseeded result under a
    seed, a metric giving a string, an executor running a refused unit are refused, each naming what is wrong."""
    import numpy as np

    from modelseek.retrieval.estimators import EstimatorInfo
    from modelseek.retrieval.fusion.methods import FusionMethod, ordered_sum
    from modelseek.retrieval.metrics import Metric
    from modelseek.testing import check_member

    def method(name, combine):
        return FusionMethod(name, "x", uses_scores=True, takes_weights=True, combine=combine, search=lambda space: [])

    with pytest.raises(TypeError, match=r"fusion method 'text': combine gave str 'fused', not an array of numbers"):
        check_member("fusion method", method("text", lambda values, weights: "fused"))
    with pytest.raises(ValueError, match="depends on the order of the runs"):
        check_member("fusion method", method("first", lambda values, weights: np.nan_to_num(values[0]) * weights[0]))
    with pytest.raises(ValueError, match=r"shape \(3, 2, 5\)"):
        check_member("fusion method", method("noreduce", lambda values, weights: values))
    ok = method("ok", lambda values, weights: ordered_sum(np.nan_to_num(values) * weights[:, None, None]))
    assert check_member("fusion method", ok) is ok

    def text(features, labels):
        return "0.5"

    with pytest.raises(TypeError, match=r"returned str '0.5' \(a score is one real number\)"):
        check_member("estimator", text)
    rng = np.random.default_rng()

    def drifting(features, labels, *, seed=0):
        return float(rng.random())

    with pytest.raises(ValueError, match="seed=3 gave different scores"):
        check_member("estimator", EstimatorInfo("drifting", drifting, seeded=True))

    class Wordy(Metric):
        cutoff = "none"

        def per_list(self, ranking, j, k):
            return "good"

    with pytest.raises(TypeError, match="metric 'wordy': per_list gave str"):
        check_member("metric", Wordy, name="wordy")

    class Eager:
        name, in_process, concurrency = "eager", True, "serial"

        def run(self, units, on_start, on_done):
            for u in units:
                on_done(u, u.call(), 1)

    with pytest.raises(ValueError, match="u3's claim was refused"):
        check_member("executor", Eager)


def test_every_kind_describes_its_members_one_way():
    """One descriptor per member of every kind (name, summary, typed properties, parameters); a hand-made
    estimator record, a plain function and ``register`` agree on the defaults (not declared scale-invariant)."""
    from modelseek.retrieval.estimators import EstimatorInfo
    from modelseek.retrieval.estimators._registry import check_estimator, estimator_record
    from modelseek.core.kinds import describe, report

    def plain(features, labels, *, shrink: float = 0.5):
        """A plain score."""
        return 0.0

    made = [EstimatorInfo("plain", plain), check_estimator("plain", plain), estimator_record("plain", plain)]
    assert {r.scale_invariant for r in made} == {False}
    d = describe("estimator", "plain", made[1])
    assert (d.summary, d.parameters) == ("A plain score.", {"shrink": 0.5})
    assert d.properties == {"input": "features", "seeded": False, "higher_is_better": True, "uses_validation": False,
                            "scale_invariant": False, "regression": False}
    members = {(m.kind, m.name): m.descriptor for m in report()}
    assert all(d is not None and d.summary for d in members.values())
    assert members[("fusion method", "rrf")].properties == {"uses_scores": False, "takes_weights": True}
    assert members[("meta-model", "ridge")].properties == {"seeded": False, "parallel": False}
    assert "hidden" in members[("meta-model", "mlp")].parameters
    assert members[("executor", "local")].properties == {"in_process": True, "concurrency": "serial"}
    from modelseek.eevee.models import META_MODELS

    assert META_MODELS.origin("mlp") == "module modelseek.eevee.meta_models.mlp"  # where it registers, not MetaModel's
    assert members[("ranker", "task_knn")].properties["needs_fit"] is True and members[("metric", "ndcg")].properties[
        "cutoff"] == "required"


def test_registration_is_spelled_one_way_for_every_kind():
    """``modelseek.register(kind, member, name=, **properties)``: the decorator returns the member as written, the
    registry holds it through the kind's check; properties only where the kind has them; a taken name is refused
    naming where it was registered; ``unregister`` takes it out again."""
    import numpy as np

    from modelseek import register
    from modelseek.retrieval.estimators import ESTIMATORS, InputKind
    from modelseek.retrieval.fusion.methods import FUSION_METHODS
    from modelseek.core.kinds import unregister
    from modelseek.retrieval.rankers.base import Ranker

    @register("estimator", name="one_way_probe", input="probs", higher_is_better=False)
    def probe(probs, labels) -> float:
        return float(np.asarray(probs).mean())

    try:
        info = ESTIMATORS.get("one_way_probe")
        assert probe.__name__ == "probe" and not hasattr(probe, "fn")  # the module keeps its plain function
        assert (info.input, info.higher_is_better, info.seeded) == (InputKind.PROBS, False, False)
        assert info.fn(np.array([[0.25, 0.75], [0.5, 0.5]]), [0, 1]) == 0.5
        with pytest.raises(ValueError, match="duplicate estimator name: 'one_way_probe'"):
            register("estimator", probe, name="one_way_probe")
    finally:
        unregister("estimator", "one_way_probe")
    assert "one_way_probe" not in ESTIMATORS
    with pytest.raises(TypeError, match="fusion method: register takes no properties here"):
        register("fusion method", FUSION_METHODS.get("rrf"), seeded=True)
    with pytest.raises(TypeError, match="ranker Nameless's own name is ''"):
        register("ranker", type("Nameless", (Ranker,), {"name": ""}))
    with pytest.raises(TypeError, match="a ranker is a Ranker subclass"):
        register("ranker", object, name="not_a_ranker")
    with pytest.raises(Exception, match="unknown kind 'rankers'"):
        register("rankers")


def test_no_built_in_registers_any_other_way():
    """Every built-in member of a kind is registered by ``register(kind, ...)`` (or lazily by its registry): no
    module calls a registry's ``add``/``register`` or a per-kind helper."""
    import re

    from modelseek.core.kinds import KINDS

    src = Path(modelseek.__file__).resolve().parent
    registries = "|".join(k.registry_target.split(":")[1] for k in KINDS)
    other = re.compile(rf"^\s*@?({registries})\.(register|add)\(|register_meta_model\(", re.M)
    found = [f"{p.relative_to(src)}:{s.count(chr(10), 0, m.start()) + 1}" for p in sorted(src.rglob("*.py"))
             if p.name not in ("registry.py", "kinds.py") for s in [p.read_text(encoding="utf-8")]
             for m in other.finditer(s)]
    assert found == []


# ------------------------------------------------------------------------------------------ the guide's blocks
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "plugin-author.md"


def _guide_blocks() -> dict[str, str]:
    """The blocks of the plugin-author guide marked ``<!-- plugin-distribution: NAME -->``, by NAME."""
    lines, out = GUIDE.read_text(encoding="utf-8").splitlines(), {}
    for i, line in enumerate(lines):
        if line.startswith("<!-- plugin-distribution:"):
            name = line.split(":", 1)[1].removesuffix("-->").strip()
            assert lines[i + 1].startswith("```"), (GUIDE, i + 2)
            end = lines.index("```", i + 2)
            out[name] = "\n".join(lines[i + 2:end]) + "\n"
    return out


def _install_guide_distribution(site: Path) -> Path:
    """The guide's module and pyproject as an installed distribution (its .dist-info on the path, as pip leaves)."""
    import tomllib

    blocks = _guide_blocks()
    project = tomllib.loads(blocks["pyproject.toml"])["project"]
    return install_distribution(site, project["name"], {"my_plugins": blocks["my_plugins.py"]},
                                project["entry-points"], version=project["version"])


def test_the_guide_table_is_the_declaration_of_every_kind():
    from modelseek.core.kinds import KINDS

    text = GUIDE.read_text(encoding="utf-8")
    for k in KINDS:
        assert f"| {k.name} | `{k.contract}` | `{k.group}` |" in text, k.name


@pytest.mark.slow(reason="the guide's distribution: its tests and four commands, one a fine-tuning grid of three "
                         "tiny BERTs on threads (about 25 s)")
def test_the_guides_blocks_run_from_an_outside_distribution(tmp_path):
    import shlex
    import subprocess
    import sys

    pytest.importorskip("transformers")
    from modelseek.testing import make_ntcir_layout
    from modelseek.testing.finetune import make_learnable_bert

    site = _install_guide_distribution(tmp_path / "site")
    env = plugin_env(site)
    # the plugin author's own tests, as written in the guide
    tests = tmp_path / "authors"
    tests.mkdir()
    (tests / "test_my_plugins.py").write_text(_guide_blocks()["test_my_plugins.py"], encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
                       capture_output=True, text=True, cwd=tests, env={**os.environ, **env})
    assert p.returncode == 0 and "3 passed" in p.stdout, p.stdout + p.stderr
    # the commands, in a folder with what they name: three tiny local models, a task folder and a quick recipe
    work = tmp_path / "work"
    make_ntcir_layout(work / "tasks", n_tasks=1, n_models=3, n_train=32, n_val=8, n_test=8, seed=1)
    (work / "tasks" / "ground-truth.csv").unlink()
    (work / "pool.yaml").write_text("name: tiny\ncandidates:\n" + "".join(
        f'  - {{id: "{i + 1}", path: "{make_learnable_bert(work / f"m{i}", seed=i, layers=1, hidden=16)}"}}\n'
        for i in range(3)), encoding="utf-8")
    (work / "recipe.yaml").write_text("lr: 0.005\nmax_epochs: 1\ncpu_threads: 1\n", encoding="utf-8")
    results = {}
    for line in _guide_blocks()["commands"].splitlines():
        argv = shlex.split(line)
        assert argv[0] == "modelseek", line
        r = run_cli_subprocess(*argv[1:], cwd=work, env=env)
        assert r.code == 0 and "Traceback" not in r.err, (line, r.out, r.err)
        results[argv[1]] = r
    assert "threads" in results["plugins"].out and "my-plugins" in results["plugins"].out
    assert "BROKEN" not in results["plugins"].out
    # the fine-tuning grid on the guide's threads executor: every job done (lazy imports raced in threads before)
    assert "3 done, 0 failed" in results["finetune"].out, results["finetune"].out
    assert "best_first" in results["evaluate"].out


@pytest.mark.slow(reason="nine fresh interpreters (about 15 s)")
def test_building_the_parser_and_help_import_no_plugin(tmp_path):
    from modelseek.core.kinds import KINDS

    marker = tmp_path / "imported"
    site = install_distribution(tmp_path / "site", "ms-spy",
                                {"ms_spy": f"open({str(marker)!r}, 'a').write('x')\nTHING = None\n"},
                                {k.group: {f"spy_{i}": "ms_spy:THING"} for i, k in enumerate(KINDS)})
    for args in (("--help",), ("rank", "--help"), ("fuse", "--help"), ("eevee", "search", "--help"),
                 ("finetune", "--help"), ("plugins", "--no-load")):
        r = _cli(site, *args)
        assert r.code == 0, (args, r.err)
        assert not marker.exists(), args  # listed by name only
    assert "spy_2" in _cli(site, "fuse", "--help").out and "spy_6" in _cli(site, "eevee", "search", "--help").out
    r = _cli(site, "plugins", "--kind", "executor")  # loading it is what shows a broken member
    assert r.code == 0 and marker.exists() and "spy_5" in r.out and "BROKEN" in r.out
