"""Generated BenCzechMark-format submissions: ``modelseek duel example`` (a few valid submissions with their
metadata, to start from) and the synthetic data of tests and benchmarks (:mod:`modelseek.testing.duel`).

Synthetic compiled submissions for duel leaderboards (tests, benchmarks, the demo app).

Each model has a latent skill; each task draws its samples (``n_samples`` fixed or a (low, high) range) and
per-sample outcomes so that a more skilled model tends to be better on every metric: accuracy / exact match
(Bernoulli), AUROC (2-4 classes, softmax of noisy logits boosted on the gold class), word perplexity
(log-likelihood per word shrinking with skill) and ROUGE (Beta scores). Everything comes from one seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..core.io import atomic_write_text
from ..core.stats.auroc import auroc
from ..core.stats.seeding import derive_rng
from .config import LeaderboardConfig, Metric
from .reference import Reference
from .submission import Submission, TaskSamples, validate_submission


def _task_rng(seed: int, *keys) -> np.random.Generator:
    return derive_rng(seed, "synthetic", *keys)


def make_submissions(config: LeaderboardConfig | None = None, n_models: int = 4,
                     n_samples: int | tuple[int, int] = 60, seed: int = 0, skills: list[float] | None = None,
                     prefix: str = "model") -> list[Submission]:
    """``n_models`` validated-shape :class:`Submission` objects built from arrays (fast; no JSON)."""
    config = config or LeaderboardConfig.load()
    rng = _task_rng(seed, "skills")
    skill = np.asarray(skills if skills is not None else rng.normal(0.0, 0.6, n_models), dtype=float)
    names = [f"{prefix}-{i:02d}" for i in range(n_models)]
    data: list[dict[str, TaskSamples]] = [{} for _ in range(n_models)]
    results: list[dict[str, dict[str, float]]] = [{} for _ in range(n_models)]
    for spec in config.tasks:
        r = _task_rng(seed, spec.task)
        n = n_samples if isinstance(n_samples, int) else int(r.integers(n_samples[0], n_samples[1] + 1))
        difficulty = r.normal(0.0, 1.0, n)
        m = spec.metric
        if m is Metric.AVG_MCAUROC:
            k = int(r.integers(2, 5))
            gold = r.integers(0, k, n)
        if m is Metric.WORD_PERPLEXITY:
            words = r.integers(20, 400, n).astype(float)
        for i in range(n_models):
            mr = _task_rng(seed, spec.task, names[i])
            if m in (Metric.ACC, Metric.EXACT_MATCH):
                prob = 1.0 / (1.0 + np.exp(-(skill[i] - difficulty)))
                values = (mr.random(n) < prob).astype(float)
                td, agg = TaskSamples(m, values=values), float(values.mean())
            elif m in (Metric.ROUGE, Metric.NDCG5):
                mu = 1.0 / (1.0 + np.exp(-(skill[i] - difficulty - 1.0)))
                values = mr.beta(mu * 8 + 0.1, (1 - mu) * 8 + 0.1)
                td, agg = TaskSamples(m, values=values), float(values.mean())
            elif m is Metric.AVG_MCAUROC:
                logits = mr.normal(0.0, 1.0, (n, k))
                logits[np.arange(n), gold] += 0.8 + 0.8 * skill[i] - 0.3 * difficulty
                probs = np.exp(logits - logits.max(axis=1, keepdims=True))
                probs = np.round(probs / probs.sum(axis=1, keepdims=True), 6)
                td = TaskSamples(m, gold=gold.copy(), probs=probs)
                agg = auroc(gold, probs)
            else:  # word perplexity
                per_word = -(3.0 - 0.4 * skill[i] + 0.3 * difficulty + mr.normal(0.0, 0.3, n)).clip(0.5, None)
                loglik = per_word * words
                td, agg = TaskSamples(m, loglik=loglik, words=words.copy()), float(np.exp(-loglik.sum() / words.sum()))
            data[i][spec.task] = td
            results[i][spec.task] = {m.value: agg}
    return [Submission({"model": names[i], "precision": "bf16", "n_params": float(1e9 * (1 + i)),
                        "source": f"https://example.org/{names[i]}"}, results[i], None, data[i])
            for i in range(n_models)]


def make_submission_dicts(config: LeaderboardConfig | None = None, n_models: int = 4,
                          n_samples: int | tuple[int, int] = 60, seed: int = 0,
                          skills: list[float] | None = None, prefix: str = "model") -> list[dict]:
    """``n_models`` submissions (dicts in the compiled format) covering every task of ``config``."""
    return [s.to_dict() for s in make_submissions(config, n_models, n_samples, seed, skills, prefix)]


LM_EVAL_HEADER = {
    "git_hash": "a1b2c3d", "transformers_version": "4.44.2", "tokenizer_pad_token": ["<pad>", "0"],
    "tokenizer_eos_token": ["</s>", "2"], "tokenizer_bos_token": ["<s>", "1"], "eot_token_id": 2,
    "max_length": 4096, "task_hashes": {}, "model_source": "hf", "model_name": "org/model",
    "model_name_sanitized": "org__model", "system_instruction": None, "system_instruction_sha": None,
    "fewshot_as_multiturn": False, "chat_template": None, "chat_template_sha": None, "start_time": 1234.5,
    "end_time": 2345.25, "total_evaluation_time_seconds": "1110.75", "n-shot": {}}


def example_config() -> LeaderboardConfig:
    """A few of BenCzechMark's own tasks (the first of each metric), with their categories and metrics."""
    full = LeaderboardConfig.load()
    picked, seen = [], set()
    for spec in full.tasks:
        if spec.metric not in seen:
            seen.add(spec.metric)
            picked.append(spec)
    return LeaderboardConfig(tuple(picked))


def write_examples(folder: str | Path, n_models: int = 3, seed: int = 0, n_samples: tuple[int, int] = (40, 80)
                   ) -> tuple[list[Path], Path]:
    """``modelseek duel example``: ``metadata.json`` (BenCzechMark's format, a few of its tasks), its
    ``reference.json`` (the tasks' doc_ids and gold labels, see :mod:`.reference`) and
    ``n_models`` compiled submissions in BenCzechMark's format (lm-evaluation-harness provenance in
    ``metadata``, ``results`` and per-sample ``predictions`` with ``doc_id``), valid for that metadata."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = example_config()
    meta_path = folder / "metadata.json"
    atomic_write_text(meta_path, json.dumps(config.to_dict(), indent=2, ensure_ascii=False) + "\n")
    paths = []
    for k, d in enumerate(make_submission_dicts(config, n_models=n_models, n_samples=n_samples, seed=seed,
                                                prefix="example-model")):
        name = d["metadata"]["model"]
        d["metadata"] = {**{k_: v for k_, v in LM_EVAL_HEADER.items() if k_ != "model_name"}, "model_name": name,
                         **d["metadata"], "description": f"generated example {k + 1} of {n_models} (seed {seed})"}
        p = folder / f"{name}.json"
        atomic_write_text(p, json.dumps(d, ensure_ascii=False) + "\n")
        paths.append(p)
        if k == 0:      # the benchmark's facts (every example shares them): the reference of a board
            ref = Reference.from_submission(validate_submission(d, config, source=str(p)))
            atomic_write_text(folder / "reference.json", ref.to_json() + "\n")
    return paths, meta_path
