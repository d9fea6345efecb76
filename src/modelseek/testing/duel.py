"""Synthetic compiled submissions for duel leaderboards (tests, benchmarks, the demo app).

Each model has a latent skill; each task draws its samples (``n_samples`` fixed or a (low, high) range) and
per-sample outcomes so that a more skilled model tends to be better on every metric: accuracy / exact match
(Bernoulli), AUROC (2-4 classes, softmax of noisy logits boosted on the gold class), word perplexity
(log-likelihood per word shrinking with skill) and ROUGE (Beta scores). Everything comes from one seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..duel.config import LeaderboardConfig, Metric
from ..duel.submission import Submission, TaskData


def _task_rng(seed: int, *keys) -> np.random.Generator:
    from ..stats.seeding import derive_rng

    return derive_rng(seed, "synthetic", *keys)


def make_submissions(config: LeaderboardConfig | None = None, n_models: int = 4,
                     n_samples: int | tuple[int, int] = 60, seed: int = 0, skills: list[float] | None = None,
                     prefix: str = "model") -> list[Submission]:
    """``n_models`` validated-shape :class:`Submission` objects built from arrays (fast; no JSON)."""
    from ..stats.auroc import auroc

    config = config or LeaderboardConfig.load()
    rng = _task_rng(seed, "skills")
    skill = np.asarray(skills if skills is not None else rng.normal(0.0, 0.6, n_models), dtype=float)
    names = [f"{prefix}-{i:02d}" for i in range(n_models)]
    data = [{} for _ in range(n_models)]
    results = [{} for _ in range(n_models)]
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
                td = TaskData(m, values=(mr.random(n) < prob).astype(float))
                agg = float(td.values.mean())
            elif m in (Metric.ROUGE, Metric.NDCG5):
                mu = 1.0 / (1.0 + np.exp(-(skill[i] - difficulty - 1.0)))
                td = TaskData(m, values=mr.beta(mu * 8 + 0.1, (1 - mu) * 8 + 0.1))
                agg = float(td.values.mean())
            elif m is Metric.AVG_MCAUROC:
                logits = mr.normal(0.0, 1.0, (n, k))
                logits[np.arange(n), gold] += 0.8 + 0.8 * skill[i] - 0.3 * difficulty
                probs = np.exp(logits - logits.max(axis=1, keepdims=True))
                probs = np.round(probs / probs.sum(axis=1, keepdims=True), 6)
                td = TaskData(m, gold=gold.copy(), probs=probs)
                agg = auroc(gold, probs)
            else:  # word perplexity
                per_word = -(3.0 - 0.4 * skill[i] + 0.3 * difficulty + mr.normal(0.0, 0.3, n)).clip(0.5, None)
                td = TaskData(m, loglik=per_word * words, words=words.copy())
                agg = float(np.exp(-td.loglik.sum() / words.sum()))
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


def write_submissions(folder: str | Path, **kwargs) -> list[Path]:
    """Write :func:`make_submission_dicts` to ``folder/<model>.json``; returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for d in make_submission_dicts(**kwargs):
        p = folder / f"{d['metadata']['model']}.json"
        p.write_text(json.dumps(d), encoding="utf-8")
        paths.append(p)
    return paths


def small_config(metrics: tuple[str, ...] = ("acc", "avg_mcauroc", "word_perplexity", "rouge_raw_r2_mid_f",
                                             "exact_match")) -> LeaderboardConfig:
    """A few tasks, one per metric, in two categories (for fast tests)."""
    tasks = {f"task_{m}": {"category": "Cat A" if k % 2 == 0 else "Cat B", "metric": m, "name": f"Task {m}"}
             for k, m in enumerate(metrics)}
    return LeaderboardConfig.from_dict({"tasks": tasks})


def write_harness_folder(folder: str | Path, submission: dict, config: LeaderboardConfig,
                         prompts: dict[str, list[float]] | None = None, stamp: str = "2025-01-01T00-00-00.000000",
                         model_args: str = "pretrained=org/model,dtype=bfloat16") -> list[Path]:
    """Write a submission back out in the harness's layout, one folder per task (tests and examples).

    ``prompts[task]`` lists score offsets: the task is written once per prompt as ``<task>_p<k>`` with its
    aggregated metric shifted by the offset (and per-sample values kept), so max-pooling can be checked.
    """
    folder = Path(folder)
    out = []
    for spec in config.tasks:
        t = spec.task
        d = folder / t
        d.mkdir(parents=True, exist_ok=True)
        keys = {t: 0.0} if not prompts or t not in prompts else {f"{t}_p{k}": off for k, off in enumerate(prompts[t])}
        agg = submission["results"][t][spec.metric.value]
        doc = {"results": {k: {"alias": k, f"{spec.metric.value},none": agg + off,
                               f"{spec.metric.value}_stderr,none": 0.01} for k, off in keys.items()},
               "config": {"model": "hf", "model_args": model_args}, "model_name": submission["metadata"]["model"]}
        (d / f"results_{stamp}.json").write_text(json.dumps(doc), encoding="utf-8")
        for k in keys:
            lines = [json.dumps({"doc_id": r.get("doc_id", i), "doc": {}, "target": "", "filter": "none",
                                 "metrics": [spec.metric.value], spec.metric.value: r[spec.metric.value]})
                     for i, r in enumerate(submission["predictions"][t])]
            (d / f"samples_{k}_{stamp}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        out.append(d)
    return out
