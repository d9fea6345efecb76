"""Profiles read from a model card as a person reads it, and the same ranking for a candidate whatever id names it
(issue #48 item 8), through the CLI on the stand-ins of the 20 NTCIR candidates (real config classes, heads,
tokenizers and card headers: :mod:`modelseek.testing.candidate_kinds`)."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from modelseek.retrieval.profiles import canonical_hf_id, profile_from_card
from modelseek.testing import make_text_task
from modelseek.testing.candidate_kinds import KINDS, write_candidate_pool

pytest.importorskip("transformers")

HUB_NOW = {3: "albert/albert-base-v2", 5: "google-bert/bert-base-uncased", 10: "distilbert/distilbert-base-uncased",
           18: "FacebookAI/roberta-base", 19: "FacebookAI/xlm-roberta-base"}


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory):
    root = tmp_path_factory.mktemp("cards")
    pool = write_candidate_pool(root / "data")
    task = make_text_task("reviews", n_classes=3, n_train=24, n_val=9, n_test=9, seed=3)
    folder = root / "tasks" / "reviews"
    folder.mkdir(parents=True)
    for name in ("train", "val", "test"):
        sp = getattr(task, name)
        (folder / f"{name}.jsonl").write_text("".join(json.dumps({"text": t, "labels": y}) + "\n"
                                                      for t, y in zip(sp.texts, sp.labels)))
    return root, pool, folder


def _renamed(pool, out, names: dict[int, str]):
    rows = yaml.safe_load(pool.read_text())["candidates"]
    for r in rows:
        r["hf_id"] = names.get(int(r["id"]), r["hf_id"])
    out.write_text(yaml.safe_dump({"candidates": rows}))
    return out


def _ranking(cli, task, pool) -> list[str]:
    r = cli("rank", task, "--pool", pool, "--json")
    assert r.code == 0, r.err
    return [row["doc"] for row in json.loads(r.out)["adaptive"][task.name]]


def test_canonical_ids_are_the_hubs_renames():
    assert canonical_hf_id("google-bert/bert-base-uncased") == "bert-base-uncased"
    assert canonical_hf_id("FacebookAI/roberta-base") == "roberta-base"
    assert canonical_hf_id("distilbert/distilroberta-base") == "distilroberta-base"
    assert canonical_hf_id("GroNLP/hateBERT") == "GroNLP/hateBERT"  # an organisation of its own: unchanged
    assert canonical_hf_id("bert-base-uncased") == "bert-base-uncased"


@pytest.mark.slow(reason="about 5 s on 2 busy cores: 20 stand-ins built, the default ranker three times")
def test_the_same_ranking_whatever_id_names_a_candidate(cli, stand_ins, tmp_path):
    root, pool, task = stand_ins
    ntcir = _ranking(cli, task, pool)
    hub_now = _ranking(cli, task, _renamed(pool, tmp_path / "hub.yaml", HUB_NOW))
    custom = _ranking(cli, task, _renamed(pool, tmp_path / "custom.yaml", {m: f"me/cand-{m}" for m in range(1, 21)}))
    assert hub_now == ntcir  # google-bert/bert-base-uncased is bert-base-uncased
    assert custom == ntcir  # a custom id for the organisers' data/models/NN snapshot: the model it holds


def test_a_card_is_read_as_a_person_reads_it(cli, stand_ins, tmp_path):
    """Folders outside the organisers' layout under custom ids: only their cards and configs speak."""
    root, _, _ = stand_ins
    rows = []
    for m in (1, 2, 5, 9, 16, 18):
        folder = shutil.copytree(root / "data" / "models" / f"{m:02d}", tmp_path / f"mine-{m}")
        rows.append({"id": str(m), "hf_id": f"me/cand-{m}", "path": str(folder)})
    pool = tmp_path / "pool.yaml"
    pool.write_text(yaml.safe_dump({"candidates": rows}))
    r = cli("profiles", "show", "--pool", pool, "--json")
    assert r.code == 0, r.err
    got = {p["id"]: p for p in json.loads(r.out)}
    assert all(p["origin"] == "model-folder" for p in got.values())
    bert = got["5"]  # tags: exbert; datasets: bookcorpus, wikipedia
    assert bert["fine_tuned_on"] == "" and "bookcorpus" in bert["pretraining_data"]
    assert bert["domain"] == "general" and bert["domain_evidence"] == "" and "exbert" not in json.dumps(bert)
    deberta = got["16"]  # tags: deberta-v1 — not a domain
    assert deberta["domain"] == "general" and deberta["domain_evidence"] == ""
    assert got["18"]["domain_evidence"] == ""
    hate = got["1"]  # no datasets, the card's text says Reddit and its tags hate speech
    assert "hate speech/abuse" in hate["domain"] and "reddit" in hate["domain"]
    fin = got["2"]  # a classification head: its datasets would be fine-tuning data; its text says finance
    assert "finance" in fin["domain"] and fin["labels"] == "positive/negative/neutral"
    squad = got["9"]  # a QA head: squad_v2 is what it was fine-tuned on
    assert squad["fine_tuned_on"] == "squad_v2" and squad["domain"] == "QA"
    shown = cli("profiles", "show", "--pool", pool)
    assert "deberta-v1" not in shown.out and "exbert" not in shown.out


def test_pretraining_corpora_on_a_classifier_card_are_not_fine_tuning_data():
    card = "---\ndatasets:\n- bookcorpus\n- wikipedia\n- imdb\ntags:\n- exbert\n---\n# x\n\nA model.\n"
    p = profile_from_card("x/y", card, {"architectures": ["BertForSequenceClassification"], "model_type": "bert"})
    assert p.fine_tuned_on == "imdb" and p.pretraining_data == "bookcorpus, wikipedia" and p.domain == "reviews"
    mlm = profile_from_card("x/y", card, {"architectures": ["BertForMaskedLM"], "model_type": "bert"})
    assert mlm.fine_tuned_on == "" and "imdb" in mlm.pretraining_data


def test_profiles_fetch_offline_fails_at_once_and_reads_the_local_cache(cli, tmp_path, monkeypatch):
    """Offline, ``profiles fetch`` refuses in one line before any download is tried (it took 47 s of retries, each
    warned about twice), and a model the local Hugging Face cache holds is read from there."""
    import huggingface_hub

    from modelseek.testing.cli import assert_one_error_line

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    tried = []
    real = huggingface_hub.hf_hub_download
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *a, **k: (tried.append(a), real(*a, **k))[1])
    r = cli("profiles", "fetch", "my-org/my-bert", "other/model", "-o", tmp_path / "p.json")
    assert r.code == 1 and not (tmp_path / "p.json").exists() and tried == []
    assert_one_error_line(r)
    assert "'my-org/my-bert', 'other/model'" in r.err and "HF_HUB_OFFLINE=1" in r.err
    snap = tmp_path / "hub" / "models--my-org--my-bert" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "README.md").write_text("---\ntags:\n- exbert\ndatasets:\n- bookcorpus\n---\n# x\n\nA model of legal "
                                    "contracts.\n")
    (snap / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"]}))
    ok = cli("profiles", "fetch", "my-org/my-bert", "-o", tmp_path / "p.json")
    assert ok.code == 0, ok.err
    prof = json.loads((tmp_path / "p.json").read_text())["profiles"][0]
    assert prof["domain"] == "legal" and prof["pretraining_data"] == "bookcorpus"
