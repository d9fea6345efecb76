"""Issue #45 (item 3): each meta-model carries its own parameters. The shared ``MetaConfig`` holds the protocol and
``model_params``, checked by the member's ``Params`` (``--meta-param KEY=VALUE`` on the command line); the defaults
give what the code gave before, bit for bit; a scikit-learn regressor's parameters are its constructor's, from an
outside distribution too."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from modelseek.eevee import META_MODELS, BatchedEvaluator, LoopEvaluator, MetaConfig, SearchConfig, load_table, search
from modelseek.eevee.meta_models import check_meta_model, regressor_meta_model
from modelseek import register
from modelseek.core.errors import InputError

TINY = ("--population", "6", "--keep", "3", "--children", "2", "--generations", "1", "--workers", "1",
        "--outer-splits", "0")
SEARCH = SearchConfig(population=8, keep=3, children=2, generations=2, seed=0)

#: captured from main before the parameters moved (commit e16fdcc), on the ``small_gate`` table: the per-split
#: losses of (b1,) and (b2, b3), and the top subsets of a k=2 search with ``SEARCH``
BEFORE = {
    "mlp": ([[0.40672234, 0.42018026, 0.65675789, 0.55220968, 0.55403495, 0.37034914, 1.2417736, 0.61481076,
              1.0688916, 0.6094349],
             [0.31838068, 0.43376133, 0.98728204, 0.40126103, 0.7601006, 0.470193, 1.1876239, 1.1733189, 1.2820489,
              0.47560638]],
            [["b1", "b4"], ["b4", "b5"], ["b1", "b3"]]),
    "ridge": ([[0.2313498, 0.26846367, 0.68368572, 0.37827957, 0.68665683, 0.38048688, 2.1674182, 0.94711214,
                0.54343486, 0.40552843],
               [0.23349102, 0.30518824, 0.24656883, 0.25805286, 0.26174346, 0.20041613, 0.67656994, 0.1910813,
                0.7666921, 0.25607845]],
              [["b2", "b3"], ["b2", "b5"], ["b1", "b2"]]),
}


@pytest.mark.parametrize("model", [pytest.param("mlp", marks=pytest.mark.slow(reason="5 s on 2 busy cores")), "ridge"])
def test_the_defaults_give_the_results_of_before(small_gate, model):
    """No parameter, ``{}`` and every default spelled out give the same losses, predictions and search, bit for
    bit; and those of main before the move (the tolerance admits only another CPU's float32 rounding)."""
    t = load_table(small_gate)
    defaults = META_MODELS.get(model).params().to_mapping()
    configs = [MetaConfig(model=model), MetaConfig(model=model, model_params={}),
               MetaConfig(model=model, model_params=defaults)]
    assert configs[0] == configs[1] == configs[2]
    subsets = [("b1",), ("b2", "b3")]
    losses = [BatchedEvaluator(t, c).losses(subsets) for c in configs]
    preds = [BatchedEvaluator(t, c).predict(["b2", "b4"]) for c in configs]
    tops = [[(s.subset, tuple(s.per_split)) for s in search(t, 2, SEARCH, meta=c).top] for c in configs]
    for i in (1, 2):
        assert np.array_equal(losses[0], losses[i]) and np.array_equal(preds[0], preds[i], equal_nan=True)
        assert tops[0] == tops[i]
    want_losses, want_top = BEFORE[model]
    np.testing.assert_allclose(losses[0], want_losses, rtol=1e-6, atol=1e-9)
    assert [list(s) for s, _ in tops[0]] == want_top


def test_the_members_parameters_reach_their_kernels(small_gate):
    t = load_table(small_gate)
    sub = [("b1", "b3")]
    ridge = BatchedEvaluator(t, MetaConfig(model="ridge")).losses(sub)
    fixed = BatchedEvaluator(t, MetaConfig(model="ridge", model_params={"alphas": "1e6"})).losses(sub)
    huge = BatchedEvaluator(t, MetaConfig(model="ridge", model_params={"alphas": [1e6]}))
    assert not np.allclose(ridge, fixed) and np.array_equal(fixed, huge.losses(sub))
    # an enormous penalty predicts the training means: the baseline's loss
    np.testing.assert_allclose(fixed[0], huge.baseline().per_split, rtol=1e-3)
    # the MLP's width and epochs reach the batched kernel and the one-at-a-time loop alike
    small = MetaConfig(model_params={"hidden": 16, "epochs": 5})
    a = BatchedEvaluator(t, small).losses(sub)
    assert not np.allclose(a, BatchedEvaluator(t).losses(sub))
    np.testing.assert_allclose(a, LoopEvaluator(t, small).losses(sub), rtol=1e-4, atol=1e-5)
    # no epoch: the network as initialised, whatever the optimiser's rate
    untrained = BatchedEvaluator(t, MetaConfig(model_params={"epochs": 0})).losses(sub)
    np.testing.assert_array_equal(untrained, BatchedEvaluator(t, MetaConfig(model_params={"epochs": 0, "lr": 1.0}))
                                  .losses(sub))


def test_an_unknown_or_bad_parameter_names_the_member_and_lists_its_parameters():
    with pytest.raises(InputError, match=r"field 'model_params.alpha': meta-model 'ridge' has no parameter 'alpha' "
                                         r"\(did you mean 'alphas'\?\); its parameters: alphas=\[0.01 \.\.\. 10000\] "
                                         r"\(13 values\)$"):
        MetaConfig(model="ridge", model_params={"alpha": 1})
    with pytest.raises(InputError, match=r"field 'model_params.alphas\[1\]': meta-model 'ridge': alphas\[1\] must be "
                                         r"a number > 0, got -1; its parameters: alphas="):
        MetaConfig(model="ridge", model_params={"alphas": "1,-1"})
    with pytest.raises(InputError, match=r"meta-model 'mlp' has no parameter 'alphas'; its parameters: hidden=100, "
                                         r"lr=0.01, weight_decay=0.01, epochs=20"):
        MetaConfig(model_params={"alphas": [1]})
    with pytest.raises(InputError, match=r"model_params.hidden.*mlp.*hidden must be an integer in \[1, 10000\], got 0"):
        MetaConfig(model_params={"hidden": 0})
    # another member's parameters do not carry over: replace() checks them against the new member
    ridge = MetaConfig(model="ridge", model_params={"alphas": [2]})
    with pytest.raises(InputError, match="meta-model 'mlp' has no parameter 'alphas'"):
        dataclasses.replace(ridge, model="mlp")
    assert dataclasses.replace(ridge, n_splits=3).model_params.alphas == (2.0,)
    assert ridge.replace(seed=4).model_params == ridge.model_params
    assert ridge.to_dict()["model_params"] == {"alphas": (2.0,)}
    # the shared config holds no member's parameter
    fields = {f.name for f in dataclasses.fields(MetaConfig)}
    assert not fields & {"hidden", "lr", "weight_decay", "epochs", "betas", "adam_eps", "ridge_alphas", "ln_eps"}


def test_meta_param_on_the_command_line(cli, small_gate):
    args = ("eevee", "search", "--table", small_gate, "-k", "2", *TINY, "--json")
    r = cli(*args, "--meta-param", "hidden=16", "--meta-param", "epochs=5")
    assert r.code == 0, r.err
    j = json.loads(r.out)
    assert j["meta_model"] == "mlp" and (j["meta_model_params"]["hidden"], j["meta_model_params"]["epochs"]) == (16, 5)
    ev = BatchedEvaluator(load_table(small_gate), MetaConfig(model_params={"hidden": 16, "epochs": 5}))
    assert j["top"][0]["score"] == pytest.approx(ev.score(j["top"][0]["benchmarks"]).mean, rel=1e-12)
    text = cli(*args[:-1], "--meta-model", "ridge", "--meta-param", "alphas=0.1,1,10")
    assert text.code == 0 and "[ridge meta-model, alphas=[0.1, 1.0, 10.0]]" in text.out.splitlines()[0]
    for extra, needles in ((("--meta-model", "ridge", "--meta-param", "alpha=1"),
                            ("field '--meta-param alpha': meta-model 'ridge' has no parameter 'alpha'",
                             "its parameters: alphas=")),
                           (("--meta-param", "hidden=-1"),
                            ("field '--meta-param hidden': meta-model 'mlp':",
                             "hidden must be an integer in [1, 10000]")),
                           (("--meta-param", "hidden"), ("field '--meta-param': expected KEY=VALUE",)),
                           (("--ridge-alpha", "1"), ("field '--ridge-alpha'", "the meta-model is 'mlp'"))):
        bad = cli(*args, *extra)
        lines = [ln for ln in bad.err.splitlines() if ln.startswith("error:")]
        assert bad.code == 1 and len(lines) == 1 and "Traceback" not in bad.err, bad.err
        assert all(n in lines[0] for n in needles), lines[0]
    # --help lists each built-in member's parameters (a plugin's are not imported to build it)
    h = " ".join(cli("eevee", "search", "--help").out.split())
    assert "mlp: hidden=100, lr=0.01" in h and "ridge: alphas=[0.01 ... 10000] (13 values)" in h


class Shrink:
    """Predicts the training means plus ``factor`` times a least-squares fit (no get_params: the constructor's
    keyword parameters are the member's)."""

    def __init__(self, factor: float = 1.0) -> None:
        self.factor = factor

    def fit(self, X, y):
        self.mean_ = y.mean(0)
        self.coef_ = np.linalg.lstsq(X - X.mean(0), y - self.mean_, rcond=None)[0]
        self.x_mean_ = X.mean(0)
        return self

    def predict(self, X):
        return self.mean_ + float(self.factor) * ((X - self.x_mean_) @ self.coef_)


@pytest.fixture
def shrink():
    member = register("meta-model", regressor_meta_model("shrink-test", Shrink))
    yield member
    META_MODELS.unregister("shrink-test")


def test_a_regressors_constructor_parameters_are_its_parameters(small_gate, shrink):
    from sklearn.linear_model import Ridge

    assert shrink.param_names() == ["factor"] and shrink.describe_params() == "factor=1"
    t = load_table(small_gate)
    ev = BatchedEvaluator(t, MetaConfig(model="shrink-test", model_params={"factor": 0.0}))
    # factor 0: the training means, the baseline's prediction
    np.testing.assert_allclose(ev.score(["b1"]).per_split, ev.baseline().per_split, rtol=1e-5, atol=1e-7)
    full = BatchedEvaluator(t, MetaConfig(model="shrink-test"))
    assert not np.allclose(full.score(["b1"]).per_split, ev.score(["b1"]).per_split)
    # an instance's own values are its defaults; scikit-learn's validation refuses a bad value before any fit
    member = check_meta_model("skr", Ridge(alpha=10.0))
    assert member.params().alpha == 10.0 and "alpha=10" in member.describe_params()
    assert member.make_params({"alpha": 1}).alpha == 1
    with pytest.raises(InputError, match=r"field 'model_params.alpha': meta-model 'skr': alpha .*alpha.* parameter "
                                         r"of Ridge must be"):
        member.make_params({"alpha": -1.0})
    with pytest.raises(InputError, match="meta-model 'skr' has no parameter 'alphas' \\(did you mean 'alpha'\\?\\)"):
        member.make_params({"alphas": 1})


# ------------------------------------------------------------------------------------------ an outside distribution
@pytest.mark.slow(reason="three fresh interpreters and EEVEE searches (about 20 s on 2 busy cores)")
def test_an_outside_regressors_parameter_set_by_meta_param_reaches_its_fits(tmp_path, small_gate):
    from sklearn.linear_model import Ridge

    from modelseek.testing.cli import run_cli_subprocess

    from modelseek.testing.plugins import install_distribution, plugin_env

    site = install_distribution(tmp_path / "site", "ms-meta",
                                {"ms_meta": "from sklearn.linear_model import Ridge\n\nRIDGE = Ridge(alpha=10.0)\n"},
                                {"modelseek.meta_models": {"skridge": "ms_meta:RIDGE"}})
    env = plugin_env(site)
    args = ("eevee", "search", "--table", small_gate, "-k", "2", *TINY, "--json", "--meta-model", "skridge")
    runs = {}
    for alpha in ("10", "0.5"):
        r = run_cli_subprocess(*args, "--meta-param", f"alpha={alpha}", env=env)
        assert r.code == 0, r.err
        runs[alpha] = json.loads(r.out)
        assert runs[alpha]["meta_model_params"]["alpha"] == float(alpha)
    # the subprocess's scores are those of the same regressor with that alpha fitted here
    t = load_table(small_gate)
    register("meta-model", regressor_meta_model("skridge-here", Ridge(alpha=10.0)))
    try:
        for alpha, j in runs.items():
            ev = BatchedEvaluator(t, MetaConfig(model="skridge-here", model_params={"alpha": float(alpha)}))
            for top in j["top"]:
                assert top["score"] == pytest.approx(ev.score(top["benchmarks"]).mean, rel=1e-9)
    finally:
        META_MODELS.unregister("skridge-here")
    common = {tuple(x["benchmarks"]): x["score"] for x in runs["10"]["top"]}
    assert any(abs(common[tuple(x["benchmarks"])] - x["score"]) > 1e-9
               for x in runs["0.5"]["top"] if tuple(x["benchmarks"]) in common)
    bad = run_cli_subprocess(*args, "--meta-param", "alphas=1", env=env)
    lines = [ln for ln in bad.err.splitlines() if ln.startswith("error:")]
    assert bad.code == 1 and len(lines) == 1 and "Traceback" not in bad.err
    assert ("meta-model 'skridge' has no parameter 'alphas' (did you mean 'alpha'?); its parameters: alpha=10"
            in lines[0])


def test_the_plugin_guides_batched_member_with_its_params_runs():
    """The plugin author's guide's ``MetaModel`` example (its ``python`` block under "Meta-models and their
    parameters") passes the kind's check and fits with the parameters it declares."""
    from modelseek.testing import check_member

    from .conftest import copied_signal_table

    text = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "plugin-author.md").read_text(encoding="utf-8")
    section = text.split("## Meta-models and their parameters", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(code, "plugin-author.md", "exec"), scope)
    two = check_member("meta-model", scope["TWO"])
    register("meta-model", two)
    try:
        cfg = MetaConfig(model="two_alphas", model_params={"alphas": [1, 100]})
        assert cfg.model_params.alphas == (1.0, 100.0) and two.describe_params() == "alphas=[0.1, 10]"
        score = BatchedEvaluator(copied_signal_table(), cfg).score(["target"])
        assert 0 < score.mean < BatchedEvaluator(copied_signal_table(), cfg).baseline().mean
    finally:
        META_MODELS.unregister("two_alphas")
