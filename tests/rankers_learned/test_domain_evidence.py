"""Issue #21: model profiles, the domain evidence of the default ranker, and learned fusion that never loses to
plain RRF by selection alone. Through the public API and CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from modelseek.cli.main import main
from modelseek.retrieval.data.pool import Candidate, Pool, load_pool
from modelseek.retrieval.profiles import (ModelProfile, profile_for, profile_from_hf_cache, profiles_from_facts,
                                read_profiles, shipped_profiles)
from modelseek.retrieval.rankers.adaptive import clears_one_se, cv_select, domain_slopes
from modelseek.testing.domain_text import make_domain_task

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data" / "ntcir19-mr" / "subtask-a"


# ------------------------------------------------------------------------------------------ profiles
def test_shipped_profiles_cover_the_ntcir_pool_with_sources():
    profs = shipped_profiles()
    pool = load_pool("ntcir19")
    assert {c.hf_id for c in pool} == set(profs)
    for p in profs.values():
        assert p.sources and all(s.startswith("http") for s in p.sources), p.hf_id
    clinical = profs["emilyalsentzer/Bio_ClinicalBERT"]
    assert "MIMIC" in clinical.evidence_text() and clinical.domain_name() == "clinical/biomedical"
    # general-purpose models carry no domain evidence, so they can never be moved by it
    for general in ("bert-base-uncased", "roberta-base", "albert-base-v2", "xlm-roberta-base"):
        assert profs[general].is_general and profs[general].evidence_text() == ""


def test_profile_from_the_local_hf_cache(tmp_path, monkeypatch):
    snap = tmp_path / "models--acme--legal-bert" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "README.md").write_text("---\nlicense: mit\nlanguage: [en]\ndatasets: [contracts-corpus]\n"
                                    "tags: [legal, contracts]\n---\n# Legal BERT\n\nA BERT pre-trained on court "
                                    "rulings and contracts.\n", encoding="utf-8")
    (snap / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertForSequenceClassification"],
                                                  "id2label": {"0": "void", "1": "valid"}}), encoding="utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    p = profile_from_hf_cache("acme/legal-bert")
    assert p is not None and p.origin == "hf-cache"
    assert (p.architecture, p.license, p.labels, p.head_task) == ("bert", "mit", "void/valid", "sequence classification")
    assert "contracts-corpus" in p.evidence_text() and "legal" in p.domain
    assert "court rulings" in p.card_excerpt
    # resolution: a candidate that is neither shipped nor in a profile file is read from the cache
    assert profile_for(Candidate(id="x", hf_id="acme/legal-bert")).origin == "hf-cache"
    assert profile_for(Candidate(id="y", hf_id="acme/absent", domain="finance")).origin == "pool"


def test_profile_files_are_validated_with_located_errors(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"profiles": [{"hf_id": "a/b", "domian": "x"}]}), encoding="utf-8")
    r = _cli(["profiles", "show", "--profiles", str(bad)])
    assert r[0] == 1 and "p.json" in r[2] and "profiles[0].domian" in r[2]
    bad.write_text(json.dumps({"profiles": [{"hf_id": "a/b"}, {"hf_id": "a/b"}]}), encoding="utf-8")
    with pytest.raises(Exception, match="duplicate profile"):
        read_profiles(bad)


def test_profiles_from_facts_and_cli(tmp_path, capsys):
    facts = tmp_path / "facts.csv"
    facts.write_text("model_id,hf_id,architecture,params_m,domain,pretraining_data,fine_tuned_on,labels,sources\n"
                     "1,acme/fin,bert,110 approx,finance,SEC filings,,,https://example.org/card\n"
                     "2,acme/plain,bert,?,general,BookCorpus + English Wikipedia,,,https://example.org/c2\n",
                     encoding="utf-8")
    out = tmp_path / "profiles.json"
    assert main(["profiles", "from-facts", str(facts), "-o", str(out)]) == 0
    profs = read_profiles(out)
    assert profs["acme/fin"].params_m == 110.0 and profs["acme/fin"].evidence_text() == "finance. SEC filings"
    assert profs["acme/plain"].params_m is None and profs["acme/plain"].is_general


def test_fetch_offline_is_one_located_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    code, _, err = _cli(["profiles", "fetch", "acme/nothing-here", "-o", str(tmp_path / "x.json")])
    assert code == 1 and "cannot fetch the card or config of 'acme/nothing-here'" in err
    assert not (tmp_path / "x.json").exists()


# ------------------------------------------------------------------------------------------ selection rules
def test_one_se_rule_and_cv_selection_known_values():
    before = np.zeros(10)
    assert clears_one_se(before, np.full(10, 0.01)) is True  # a consistent gain (SE 0)
    assert clears_one_se(before, before) is False  # no change is no gain
    assert clears_one_se(before, np.array([0.1, 0.2] * 5)) is True
    assert clears_one_se(before, np.array([0.3, -0.3] * 5)) is False
    # a grid whose best configuration only fits noise is not kept; a real gain is
    rng = np.random.default_rng(0)
    kept = [cv_select(rng.normal(0, 0.1, (50, 40)), np.zeros(40), seed=s)[1] for s in range(30)]
    assert sum(kept) <= 8  # under the null about 1 in 6 (one SE, one-sided), not the in-sample best's 30 in 30
    gain = np.vstack([np.zeros(40), np.full(40, 0.05) + rng.normal(0, 0.01, 40)])
    best, keep = cv_select(gain, np.zeros(40), seed=0)
    assert best == 1 and keep is True


# ------------------------------------------------------------------------------------------ the default ranker
def _shipped():
    from modelseek.retrieval.rankers.default import load_default

    return load_default()


@pytest.mark.slow(reason="9 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("seed", [0, 1])
def test_text_without_a_domain_keeps_the_prior(seed):
    """Tasks whose text carries no domain signal: the default ranks exactly as the average-rank prior (nDCG@5
    difference 0 against any truth) and says it fell back to the prior."""
    ranker = _shipped()
    pool = load_pool("ntcir19")
    task = make_domain_task("plain", seed=seed)
    ex = ranker.explain(task, pool)
    assert ex["evidence"]["fallback_to_prior"] is True and ex["evidence"]["domain_matches"] == []
    prior = -ranker.utility_.mean(axis=0)  # the average rank over the past tasks
    order = [c["doc"] for c in ex["candidates"]]
    expected = [pool[int(j)].id for j in np.argsort(prior, kind="stable")]
    assert order == expected


@pytest.mark.slow(reason="14 s (setup and call) on 2 busy cores")
def test_domain_text_names_the_card_evidence():
    """Social posts: the Twitter model's card matches and its record on matching past tasks moves it into the top
    3, explained; clinical notes: Bio_ClinicalBERT likewise, with its slope and the card's corpus; financial news:
    finbert's card match moves it up and the explanation says by how much."""
    ranker = _shipped()
    pool = load_pool("ntcir19")
    prior = -ranker.utility_.mean(axis=0)
    hf = list(ranker.trained_.hf_ids)
    for domain, model, words in (("social", "cardiffnlp/twitter-roberta-base-sentiment-latest", ("tweets", "social")),
                                 ("clinical", "emilyalsentzer/Bio_ClinicalBERT", ("clinical", "MIMIC"))):
        ex = ranker.explain(make_domain_task(domain, seed=0), pool)
        top3 = [c for c in ex["candidates"][:3] if c["model"] == model]
        assert top3, (domain, [c["model"] for c in ex["candidates"][:5]])
        dom = [e for e in top3[0]["evidence"] if e["kind"] == "domain"]
        assert dom and dom[0]["ranks"] > 0 and all(w in dom[0]["text"] for w in words)
        assert dom[0]["slope"] > 0 and dom[0]["slope_se"] > 0 and dom[0]["z"] > 1
        assert "ranks per unit of card match" in dom[0]["text"]
        # the move is the slope times the match above the threshold, and nothing else moved it
        assert dom[0]["ranks"] == pytest.approx(dom[0]["slope"] * (dom[0]["z"] - 0.5))
        assert top3[0]["expected_rank"] == pytest.approx(prior[hf.index(model)] - dom[0]["ranks"])
        assert {m["model"] for m in ex["evidence"]["domain_matches"]} >= {model}
    ex = ranker.explain(make_domain_task("finance", seed=0), pool)
    fin = next(c for c in ex["candidates"] if c["model"] == "ProsusAI/finbert")
    assert any(e["kind"] == "domain" and "finance" in e["text"] for e in fin["evidence"])
    assert fin["expected_rank"] < prior[hf.index("ProsusAI/finbert")]
    # no general-purpose model is moved by domain evidence
    for c in ex["candidates"]:
        if shipped_profiles()[c["model"]].is_general:
            assert not any(e["kind"].startswith("domain") for e in c["evidence"])


def test_domain_slopes_are_least_squares_slopes():
    """Known values: each column's slope and standard error equal scipy's linear regression of the utility on
    max(z - tau, 0); a column no past task matched has slope 0; leave-one-out rows equal a refit without the row."""
    from scipy.stats import linregress

    rng = np.random.default_rng(3)
    z = rng.normal(size=(30, 4))
    z[:, 3] = -1.0  # never above the threshold
    u = rng.normal(size=(30, 4)) + 0.7 * np.maximum(z - 0.5, 0)
    slope, se = domain_slopes(z, u, 0.5)
    for j in range(3):
        ref = linregress(np.maximum(z[:, j] - 0.5, 0), u[:, j])
        assert slope[j] == pytest.approx(ref.slope) and se[j] == pytest.approx(ref.stderr)
    assert slope[3] == 0.0 and se[3] == 0.0
    loo, _ = domain_slopes(z, u, 0.5, loo=True)
    for i in (0, 17):
        keep = np.arange(30) != i
        assert np.allclose(loo[i], domain_slopes(z[keep], u[keep], 0.5)[0])


def test_card_matches_are_the_training_tasks_leave_one_out_z_behind_the_shipped_slopes():
    """``card_matches`` gives the z the default's slopes are fitted on: a column per trained candidate, non-zero
    exactly for the candidates whose profile has card evidence, each row standardised by the other tasks."""
    from modelseek.retrieval.rankers.adaptive import card_matches
    from modelseek.retrieval.rankers.default import load_default

    r = load_default()
    z, carded = card_matches(r)
    assert z.shape == r.utility_.shape and len(carded) == 11
    assert not z[:, [j for j in range(z.shape[1]) if j not in carded]].any()
    a = r.akeys_.astype(np.float64) @ r.profile_emb_[carded].astype(np.float64).T
    i = 5  # row i standardised by the mean and SD of the other rows
    rest = np.delete(a, i, axis=0)
    np.testing.assert_allclose(z[i, carded], (a[i] - rest.mean(0)) / rest.std(0), rtol=1e-6)
    slopes, se, pooled = r.trained_slopes()
    ref, ref_se = domain_slopes(z, r.utility_, float(r.domain_threshold_))
    np.testing.assert_allclose(slopes, ref)
    np.testing.assert_allclose(se, ref_se)
    assert pooled == pytest.approx(float(np.mean(ref[carded])))


@pytest.mark.slow(reason="10 s (setup and call) on 2 busy cores")
def test_artifact_of_the_earlier_domain_form_ranks_without_it(tmp_path):
    """An artifact written before the slope form (no `domain_model`) loads with the domain term off, not with the
    old weight applied to the new form."""
    from modelseek.retrieval.rankers.default import load_default
    from modelseek.retrieval.rankers.resolve import resolve

    art = json.loads((ROOT / "src/modelseek/resources/rankers/adaptive-ntcir19.json").read_text())
    assert art["extra"]["domain_model"] == "slope"
    del art["extra"]["domain_model"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(art))
    ranker = resolve(str(old), {})
    pool = load_pool("ntcir19")
    ex = ranker.explain(make_domain_task("clinical", seed=0), pool)
    assert ex["blend"]["domain_weight"] == 0.0 and ex["evidence"]["domain_matches"] == []
    prior = -ranker.utility_.mean(axis=0)
    assert [c["doc"] for c in ex["candidates"]] == [pool[int(j)].id for j in np.argsort(prior, kind="stable")]
    assert load_default().domain_weight_ == 1.0


@pytest.mark.slow(reason="1.3 s in the quick loop on 2 busy cores")
def test_candidate_without_history_gets_a_profile_prior(tmp_path):
    """A pool with a model the ranker has no fine-tuning history for: ranked, not refused, and explained."""
    prof = tmp_path / "profiles.json"
    prof.write_text(json.dumps({"profiles": [{"hf_id": "acme/clinical-roberta", "architecture": "roberta",
                                              "domain": "clinical", "pretraining_data": "hospital discharge "
                                              "summaries and clinical notes", "sources": ["https://example.org"]}]}),
                    encoding="utf-8")
    from modelseek.retrieval.rankers.adaptive import AdaptiveRanker

    ranker = _shipped()
    params = {**ranker.get_params(), "profiles": str(prof)}
    r2 = AdaptiveRanker.load(ranker.artifact_, **{k: v for k, v in params.items() if k == "profiles"})
    pool = Pool([*load_pool("ntcir19"), Candidate(id="21", hf_id="acme/clinical-roberta")])
    ex = r2.explain(make_domain_task("clinical", seed=0), pool)
    new = next(c for c in ex["candidates"] if c["doc"] == "21")
    assert new["history"] is False
    kinds = [e["kind"] for e in new["evidence"]]
    assert "no_history" in kinds and "domain" in kinds
    scores = r2.rank(make_domain_task("clinical", seed=0), pool)
    assert set(scores) == {c.id for c in pool} and all(np.isfinite(list(scores.values())))


@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
def test_rank_cli_prints_the_evidence(tmp_path, capsys):
    from modelseek.testing import write_task_table

    path = write_task_table(make_domain_task("social", seed=0), tmp_path / "posts.csv")
    assert main(["rank", str(path)]) == 0
    out = capsys.readouterr().out
    assert "domain: social media/twitter" in out and "card: ~124M tweets" in out
    assert "40 went to validation" in out and "criticality:" in out and "regret rule" in out


# ------------------------------------------------------------------------------------------ fusion
def test_vs_rrf_selection_keeps_plain_rrf_unless_the_learned_choice_generalises():
    from modelseek.retrieval.fusion.core import Fusion
    from modelseek.retrieval.fusion.learned import _choose_vs_rrf, plain_rrf_index

    grid = [Fusion.build(["a", "b"], "rrf"), Fusion.build(["a", "b"], "wsum", "min-max", (0.9, 0.1)),
            Fusion.build(["a", "b"], "wsum", "min-max", (0.1, 0.9))]
    assert plain_rrf_index(grid) == 0
    rng = np.random.default_rng(1)
    noise = rng.normal(0.6, 0.1, (3, 40))
    noise[1] = noise[0] + rng.normal(0, 0.05, 40)  # fits noise: better on some topics, worse on others
    noise[2] = noise[0] - 0.05
    assert _choose_vs_rrf(noise, list(range(40)), grid) == 0
    real = noise.copy()
    real[1] = real[0] + 0.05 + rng.normal(0, 0.01, 40)  # a real, consistent gain
    assert _choose_vs_rrf(real, list(range(40)), grid) == 1


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/data/ntcir19-mr/subtask-a (absent)")
def test_learned_fusion_not_below_plain_rrf_on_ntcir(tmp_path):
    """avgrank prior (cross-fitted) + a generated frozen-feature-like run on the 70 training tasks: the learned
    fusion's held-out nDCG@5 is not below plain RRF's."""
    from modelseek.retrieval.bench import cross_validate
    from modelseek.retrieval.data.run import Run
    from modelseek.retrieval.data.truth import GroundTruth
    from modelseek.retrieval.fusion import optimize_fusion
    from modelseek.retrieval.fusion.learned import LEARNED, PLAIN_RRF

    truth = GroundTruth.from_csv(SHARED / "ground-truth.csv")
    prior = cross_validate("avgrank", truth, load_pool(SHARED / "models.csv"), folds=5, seed=0).runs[0].with_id("avgrank")
    nf1 = truth.matrix("normalized_f1")
    noisy = nf1 + np.random.default_rng(0).normal(0, 0.03, nf1.shape)
    est = Run.from_scores({str(t): {str(m): float(noisy.loc[t, m]) for m in nf1.columns} for t in nf1.index}, "est")
    pt = optimize_fusion([prior, est], truth, folds=5, seed=0).cv.per_topic
    assert pt[LEARNED].mean() >= pt[PLAIN_RRF].mean()


def _cli(argv):
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------------------------ output a reader can use
def test_wrong_column_names_the_option_that_fixes_it(tmp_path):
    data = tmp_path / "t.csv"
    data.write_text("review,stars\ngood stuff,5\nbad,1\n", encoding="utf-8")
    code, _, err = _cli(["rank", str(data)])
    assert code == 1 and "t.csv:1: field 'text'" in err and "--text-col" in err
    code, _, err = _cli(["rank", str(data), "--text-col", "review"])
    assert code == 1 and "field 'label'" in err and "--label-col" in err


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_rank_json_has_each_fact_once(tmp_path):
    from modelseek.testing import write_task_table

    path = write_task_table(make_domain_task("plain", seed=3, n_train=40, n_val=8, n_test=8), tmp_path / "p.csv")
    code, out, err = _cli(["rank", str(path), "--json"])
    assert code == 0, err
    doc = json.loads(out)
    entries = doc["adaptive"]["p"]
    cands = doc["explanations"]["adaptive"]["p"]["candidates"]
    assert all(set(e) == {"doc", "rank", "score", "model"} for e in entries)
    assert [c["doc"] for c in cands] == [e["doc"] for e in entries]
    assert not any({"rank", "model"} & set(c) for c in cands)


@pytest.mark.slow(reason="22 s (setup and call) on 2 busy cores")
def test_readme_commands_run_on_the_generated_layout(tmp_path):
    """README's bench and eevee lines work on a fresh clone without ../shared: `demo --layout` writes the folder."""
    code, out, err = _cli(["demo", "--out", str(tmp_path / "try"), "--layout"])
    assert code == 0, err
    root = tmp_path / "try" / "subtask-a"
    assert "generated NTCIR-19 Subtask A layout (24 tasks x 8 models)" in out
    assert {p.name for p in root.iterdir()} >= {"ground-truth.csv", "models.csv", "tasks.csv", "task-data"}
    code, out, err = _cli(["bench", str(root), "--method", "avgrank", "--plot", str(tmp_path / "b.png")])
    assert code == 0 and (tmp_path / "b.png").stat().st_size > 0, err
    code, out, err = _cli(["eevee", "search", "--ground-truth", str(root / "ground-truth.csv"), "-k", "3",
                           "--generations", "2", "--seed", "0"])
    assert code == 0, err


@pytest.mark.slow(reason="33 s (setup and call) on 2 busy cores")
def test_bench_metadata_with_a_pool_file(tmp_path):
    """Issue #24: `bench LAYOUT -m metadata --pool my-pool.csv` gave the card pool as a Pool object to a string
    parameter ("field '--param pool': must be a string") although no --param was given."""
    import shutil

    code, _, err = _cli(["demo", "--out", str(tmp_path / "try"), "--layout"])
    assert code == 0, err
    root = tmp_path / "try" / "subtask-a"
    mine = tmp_path / "my-pool.csv"
    shutil.copy(root / "models.csv", mine)
    code, out, err = _cli(["bench", str(root), "-m", "metadata", "--pool", str(mine), "--folds", "3", "--json"])
    assert code == 0, err
    assert json.loads(out)["methods"]["metadata"]["tiers"]["all"]["n"] == 24
