"""``modelseek duel compile``: lm-evaluation-harness folders -> submission, max-pooled over prompts."""

import json

import pytest

from modelseek.duel.compile import compile_submission
from modelseek.duel.submission import validate_submission
from modelseek.core.errors import InputError
from modelseek.testing.duel import write_harness_folder


def test_compile_round_trip_and_max_pooling(tmp_path, cfg, sub_dicts):
    sub = sub_dicts[0]
    write_harness_folder(tmp_path / "h", sub, cfg,
                         prompts={"task_acc": [0.0, 0.2, -0.1], "task_word_perplexity": [0.0, -1.0, 3.0]})
    obj = compile_submission(sorted((tmp_path / "h").iterdir()), cfg)
    assert obj["metadata"]["model"] == "model-00" and obj["metadata"]["precision"] == "bfloat16"
    # the best prompt: highest accuracy, lowest perplexity
    assert obj["metadata"]["prompts"] == {"task_acc": "task_acc_p1", "task_word_perplexity": "task_word_perplexity_p1"}
    assert obj["results"]["task_acc"]["acc"] == pytest.approx(sub["results"]["task_acc"]["acc"] + 0.2, abs=0.02)
    assert obj["metadata"]["transformers_version"] == "4.44.2"          # lm-eval provenance kept
    assert obj["predictions"]["task_avg_mcauroc"] == sub["predictions"]["task_avg_mcauroc"]
    s = validate_submission(obj, cfg)
    assert s.data["task_acc"].n == 80


def test_cli_compile(cli, tmp_path, cfg, sub_dicts, meta_file):
    folders = write_harness_folder(tmp_path / "h", sub_dicts[1], cfg)
    out = tmp_path / "sub.json"
    r = cli("duel", "compile", *folders, "-o", out, "--metadata", meta_file, "--model", "mine", "--params", "7e9")
    assert r.code == 0, r.err
    obj = json.loads(out.read_text())
    assert obj["metadata"]["model"] == "mine" and obj["metadata"]["n_params"] == 7e9
    assert cli("duel", "validate", out, "--metadata", meta_file).code == 0


def test_compile_errors(tmp_path, cfg, sub_dicts):
    folders = write_harness_folder(tmp_path / "h", sub_dicts[0], cfg)
    with pytest.raises(InputError, match="no results for task 'task_rouge_raw_r2_mid_f'"):
        compile_submission([f for f in folders if f.name != "task_rouge_raw_r2_mid_f"], cfg)
    for p in (tmp_path / "h" / "task_acc").glob("samples_*"):
        p.unlink()
    with pytest.raises(InputError, match="--log_samples"):
        compile_submission(folders, cfg)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no results"):
        compile_submission([tmp_path / "empty"], cfg)


def test_compile_malformed_samples_line(tmp_path, cfg, sub_dicts):
    folders = write_harness_folder(tmp_path / "h", sub_dicts[0], cfg)
    samples = next((tmp_path / "h" / "task_acc").glob("samples_*.jsonl"))
    lines = samples.read_text().splitlines()
    lines[2] = "{not json"
    samples.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="malformed JSON") as exc:
        compile_submission(folders, cfg)
    assert exc.value.line == 3 and exc.value.path == str(samples)


def test_bad_metadata_file(cli, tmp_path, sub_files):
    bad = tmp_path / "meta.json"
    bad.write_text('{"tasks": {"t": {"category": "c", "metric": "bleu"}}}')
    r = cli("duel", "tournament", *sub_files[:2], "--metadata", bad)
    assert r.code == 1 and "unknown metric 'bleu'" in r.err and "tasks.t.metric" in r.err
    r = cli("duel", "tournament", *sub_files[:2], "--metadata", tmp_path / "missing.json")
    assert r.code == 1 and "no such metadata file" in r.err
