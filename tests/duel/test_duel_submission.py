"""Submission format and validator: clear, located errors."""

import copy
import json

import numpy as np
import pytest

from modelseek.duel.config import LeaderboardConfig, Metric
from modelseek.duel.submission import load_submission, submission_from_bytes, validate_submission
from modelseek.core.errors import InputError


def test_default_config_is_benczechmark():
    cfg = LeaderboardConfig.load()
    assert len(cfg.tasks) == 50 and len(cfg.categories) == 9
    assert cfg.spec("benczechmark_propaganda_argumentace").metric is Metric.AVG_MCAUROC
    assert {t.metric.value for t in cfg.tasks} == {"avg_mcauroc", "acc", "exact_match", "word_perplexity"}


def test_valid_submission_round_trip(cfg, sub_dicts):
    s = validate_submission(sub_dicts[0], cfg)
    assert s.model == "model-00" and s.tasks == cfg.task_ids
    d = s.data["task_avg_mcauroc"]
    assert d.probs.shape[0] == d.gold.shape[0] == 80
    again = submission_from_bytes(s.to_json().encode(), cfg)
    assert again.sha256 == s.sha256


def test_doc_id_orders_samples(cfg, sub_dicts):
    d = copy.deepcopy(sub_dicts[0])
    recs = d["predictions"]["task_acc"]
    d["predictions"]["task_acc"] = recs[::-1]
    a = validate_submission(sub_dicts[0], cfg).data["task_acc"].values
    b = validate_submission(d, cfg).data["task_acc"].values
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mutate, message, field", [
    (lambda d: d["predictions"].pop("task_acc"), "missing task 'task_acc'", "predictions"),
    (lambda d: d["predictions"].__setitem__("nope", []), "not on this leaderboard", "predictions"),
    (lambda d: d["metadata"].pop("model"), "model name is required", "metadata.model"),
    (lambda d: d["metadata"].__setitem__("description", "x" * 5001), "too long: 5,001 characters > limit 5,000",
     "metadata.description"),
    (lambda d: d["metadata"].__setitem__("source", "file:///etc/passwd"), "http", "metadata.source"),
    (lambda d: d["metadata"].__setitem__("model", "a\nb"), "control characters", "metadata.model"),
    (lambda d: d["results"]["task_acc"].__setitem__("acc", 0.99), "reported acc = 0.99 but the predictions give",
     "results.task_acc.acc"),
    (lambda d: d["predictions"]["task_acc"][3].__setitem__("acc", 0.5), "must be 0 or 1", "predictions.task_acc[3].acc"),
    (lambda d: d["predictions"]["task_avg_mcauroc"][0].__setitem__("avg_mcauroc", [0, [1.0]]),
     "gold class index", "predictions.task_avg_mcauroc[0].avg_mcauroc"),
    (lambda d: d["predictions"]["task_word_perplexity"][1].__setitem__("word_perplexity", [-3.0, 0]),
     "number of words > 0", "predictions.task_word_perplexity[1].word_perplexity"),
    (lambda d: d["results"].pop("task_exact_match"), "aggregated 'exact_match'", "results.task_exact_match"),
    (lambda d: d["predictions"]["task_acc"][2].__setitem__("doc_id", 0), "duplicate doc_id", "predictions.task_acc"),
])
def test_bad_submissions(cfg, sub_dicts, mutate, message, field):
    d = copy.deepcopy(sub_dicts[0])
    mutate(d)
    with pytest.raises(InputError, match=message) as exc:
        validate_submission(d, cfg, source="sub.json")
    assert exc.value.field == field and exc.value.path == "sub.json"


def test_malformed_json_names_the_line(tmp_path, cfg):
    p = tmp_path / "bad.json"
    p.write_text('{"metadata": {"model": "x"},\n "results": {,}\n}', encoding="utf-8")
    with pytest.raises(InputError, match="malformed JSON") as exc:
        load_submission(p, cfg)
    assert exc.value.line == 2 and exc.value.path == str(p)


def test_oversized_upload(cfg, sub_dicts):
    data = json.dumps(sub_dicts[0]).encode()
    with pytest.raises(InputError, match="too large"):
        submission_from_bytes(data, cfg, max_bytes=len(data) - 1)


def test_vectorised_path_equals_record_by_record(cfg, sub_dicts, monkeypatch):
    import modelseek.duel.submission as sm

    d = copy.deepcopy(sub_dicts[2])
    for t in d["predictions"]:
        d["predictions"][t] = d["predictions"][t][::-1]      # reversed doc_ids: both paths must reorder
    fast = validate_submission(d, cfg)
    monkeypatch.setattr(sm, "_fast_records_to_data", lambda metric, records: None)
    slow = validate_submission(d, cfg)
    for t in cfg.task_ids:
        for k in ("values", "gold", "probs", "loglik", "words"):
            a, b = getattr(fast.data[t], k), getattr(slow.data[t], k)
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a, b)
