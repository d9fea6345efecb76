"""TuPaTE on every encoder kind of the NTCIR pool (issue #48 item 8): DeBERTa, ALBERT and DistilBERT encoders (not
BERT-style inside) work in both modes, the published mode reads its default encoder (bert-base-multilingual-uncased,
candidate 4) from the organisers' ``data/models/04`` when the pool has it, through the CLI on tiny random snapshots."""

from __future__ import annotations

import json
import logging

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from modelseek.retrieval.rankers.tupate import FullPromptTuner, PromptTuner, bert_style  # noqa: E402
from modelseek.testing import make_text_task  # noqa: E402
from modelseek.testing.candidate_kinds import make_candidate_snapshot  # noqa: E402


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    root = tmp_path_factory.mktemp("encoders")
    return {name: make_candidate_snapshot(root / name, m)
            for name, m in (("deberta", 16), ("albert", 3), ("distilbert", 10), ("roberta", 18))}


@pytest.mark.parametrize("kind", ["deberta", "albert", "distilbert", "roberta"])
def test_published_prompt_tuning_on_each_encoder_kind(encoders, kind):
    task = make_text_task("t", n_classes=3, n_train=12, n_val=3, n_test=3, seed=1)
    tuner = FullPromptTuner(str(encoders[kind]), n_prompts=4, epochs=1, batch_size=8, device="cpu")
    mat = tuner.tune(task)
    emb = tuner.model.get_input_embeddings().weight.shape[1]  # ALBERT: embedding_size 8 < hidden 16
    assert mat.shape == (4, emb) and bool(torch.isfinite(torch.from_numpy(mat)).all())
    assert bert_style(tuner.model) is (kind == "roberta")


@pytest.mark.slow(reason="about 10 s on 2 busy cores: three train-ranker runs on tiny encoders")
def test_the_cpu_approximation_on_encoders_that_are_not_bert_style(cli, encoders, tmp_path, caplog):
    from modelseek.testing import make_ntcir_layout

    layout = make_ntcir_layout(tmp_path / "ntcir", n_tasks=4, n_models=3, seed=0, n_train=12, n_val=3, n_test=3)
    caplog.set_level(logging.WARNING, logger="modelseek.retrieval.rankers.tupate")
    for kind in ("deberta", "albert", "distilbert"):
        out = tmp_path / f"{kind}.json"
        r = cli("train-ranker", layout, "--method", "tupate", "-p", f"encoder_path={encoders[kind]}", "-p",
                "n_prompts=4", "-p", "pt_epochs=1", "-p", "pt_max_texts=8", "-p", "epochs=3", "-p", "heads=2",
                "-p", f"cache_dir={tmp_path / 'c'}", "-o", out)
        assert r.code == 0, r.err
        assert json.loads(out.read_text())["method"] == "tupate"
    said = [rec.getMessage() for rec in caplog.records]
    assert sum("prompts at the input of" in m for m in said) == 3, said
    assert any("DebertaModel" in m for m in said) and any("AlbertModel" in m for m in said)
    with pytest.raises(Exception, match="BERT-style"):  # the layer-by-layer approximation itself refuses them
        PromptTuner(str(encoders["deberta"]), n_prompts=4)


@pytest.mark.slow(reason="about 30 s on 2 busy cores: the organisers' layout and prompt tuning on 4 tasks")
def test_published_mode_reads_its_encoder_from_the_organisers_snapshot(cli, tmp_path, caplog):
    from modelseek.testing.organisers import make_organisers_layout

    repo = make_organisers_layout(tmp_path / "repo", n_test=2, n_train_tasks=4, snapshots=(4,), wide_task=None)
    caplog.set_level(logging.INFO, logger="modelseek.retrieval.rankers.tupate")
    r = cli("train-ranker", repo / "data", "--method", "tupate", "-p", "mode=published", "-p", "device=cpu",
            "-p", "n_prompts=4", "-p", "pt_epochs=1", "-p", "epochs=3", "-p", f"cache_dir={tmp_path / 'c'}",
            "-o", tmp_path / "t.json")
    assert r.code == 0, r.err  # offline, and bert-base-multilingual-uncased is in no Hugging Face cache here
    assert any("from the pool's snapshot" in rec.getMessage() and rec.getMessage().rstrip().endswith("04")
               for rec in caplog.records), [rec.getMessage() for rec in caplog.records]
