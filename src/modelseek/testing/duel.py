"""Synthetic compiled submissions for duel leaderboards (tests, benchmarks, the demo app).

Each model has a latent skill; each task draws its samples (``n_samples`` fixed or a (low, high) range) and
per-sample outcomes so that a more skilled model tends to be better on every metric: accuracy / exact match
(Bernoulli), AUROC (2-4 classes, softmax of noisy logits boosted on the gold class), word perplexity
(log-likelihood per word shrinking with skill) and ROUGE (Beta scores). Everything comes from one seed.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np

from ..duel.config import LeaderboardConfig, Metric
from ..duel.examples import (LM_EVAL_HEADER, _task_rng, example_config, make_submission_dicts,  # noqa: F401
                             make_submissions, write_examples)
from ..duel.submission import _records_to_data, metric_value


def renamed(submission: dict, model: str, team: str | None = None) -> bytes:
    """An upload of ``submission`` (a dict) under another model name (and team): its bytes, as a client sends them."""
    out = copy.deepcopy(submission)
    out["metadata"]["model"] = model
    if team is not None:
        out["metadata"]["team"] = team
    return json.dumps(out, ensure_ascii=False).encode()


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


#: what an lm-evaluation-harness results header carries (BenCzechMark's compile script copies these)
def _shifted(records: list[dict], metric: Metric, offset: float) -> list[dict]:
    """Per-sample records whose aggregate moves by about ``offset`` (another prompt of the same model)."""
    m = metric.value
    out = [dict(r) for r in records]
    if offset == 0:
        return out
    if metric in (Metric.ACC, Metric.EXACT_MATCH):
        want = 1 if offset > 0 else 0
        todo = round(abs(offset) * len(out))
        for r in out:
            if todo and r[m] != want:
                r[m], todo = want, todo - 1
    elif metric in (Metric.ROUGE, Metric.NDCG5):
        for r in out:
            r[m] = float(min(1.0, max(0.0, r[m] + offset)))
    elif metric is Metric.WORD_PERPLEXITY:
        ll, w = sum(r[m][0] for r in out), sum(r[m][1] for r in out)
        ppl = float(np.exp(-ll / w))
        factor = np.log(max(ppl + offset, 1.0001)) / np.log(ppl)
        for r in out:
            r[m] = [r[m][0] * factor, r[m][1]]
    else:
        raise ValueError(f"prompt variants of {metric.value} are not supported by this helper")
    return out


def write_harness_folder(folder: str | Path, submission: dict, config: LeaderboardConfig,
                         prompts: dict[str, list[float]] | None = None, stamp: str = "2025-01-01T00-00-00.000000",
                         model_args: str = "pretrained=org/model,dtype=bfloat16",
                         summarisation_suffix: bool = False) -> list[Path]:
    """Write a submission back out in lm-evaluation-harness's log layout, one folder per task.

    ``prompts[task]`` lists aggregate offsets: the task is written once per prompt as ``<task>_p<k>`` with
    per-sample values moved so that their aggregate moves by about the offset (the aggregate written is the
    one the samples give, as the harness writes it), so max-pooling can be checked. The results header
    carries the harness's provenance fields (:data:`LM_EVAL_HEADER`); ``summarisation_suffix`` spells the
    ROUGE metric ``rouge_raw_r2_mid_f_without_bootstrap`` as BenCzechMark's summarisation tasks do.
    """
    folder = Path(folder)
    out = []
    for spec in config.tasks:
        t = spec.task
        d = folder / t
        d.mkdir(parents=True, exist_ok=True)
        keys = {t: 0.0} if not prompts or t not in prompts else {f"{t}_p{k}": off for k, off in enumerate(prompts[t])}
        name = spec.metric.value
        if summarisation_suffix and spec.metric is Metric.ROUGE:
            name += "_without_bootstrap"
        variants = {k: _shifted(submission["predictions"][t], spec.metric, off) for k, off in keys.items()}
        aggs = {k: metric_value(_records_to_data(t, spec.metric, v, "<test>")) for k, v in variants.items()}
        doc = {"results": {k: {"alias": k if k == t else f"  - prompt-{k.rsplit('_p', 1)[1]}", f"{name},none": aggs[k],
                               f"{name}_stderr,none": 0.01} for k in keys},
               "config": {"model": "hf", "model_args": model_args},
               **LM_EVAL_HEADER, "model_name": submission["metadata"]["model"]}
        (d / f"results_{stamp}.json").write_text(json.dumps(doc), encoding="utf-8")
        for k, recs in variants.items():
            lines = [json.dumps({"doc_id": r.get("doc_id", i), "doc": {}, "target": "", "filter": "none",
                                 "metrics": [name], name: r[spec.metric.value]})
                     for i, r in enumerate(recs)]
            (d / f"samples_{k}_{stamp}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        out.append(d)
    return out


def bcm_compiled(folders: list[str | Path], config: LeaderboardConfig) -> dict:
    """A submission as BenCzechMark's compile script builds it from lm-evaluation-harness log folders:
    the results header's fields copied into ``metadata``, per task the best prompt's aggregate with its
    ``alias`` and the ``max_centered_variance`` over prompts in ``results``, and its per-sample records
    (metric spelled as in the logs, e.g. ``rouge_raw_r2_mid_f_without_bootstrap``) in ``predictions``."""
    results, preds, metadata = {}, {}, {}
    for folder in folders:
        for rp in sorted(Path(folder).rglob("results_*.json")):
            doc = json.loads(rp.read_text(encoding="utf-8"))
            metadata.update({k: doc[k] for k in LM_EVAL_HEADER if k in doc})
            for spec in config.tasks:
                cands = {k: v for k, v in doc["results"].items() if k == spec.task or k.startswith(spec.task + "_p")}
                if not cands:
                    continue
                name_of = {k: next(f for f in v if f.split(",")[0].startswith(spec.metric.value)
                                   and "_stderr" not in f) for k, v in cands.items()}
                vals = {k: float(cands[k][name_of[k]]) for k in cands}
                pick = (max if spec.metric.higher_is_better else min)(sorted(vals), key=vals.__getitem__)
                centred = np.array(list(vals.values())) - np.mean(list(vals.values()))
                metric = name_of[pick].split(",")[0]
                results[spec.task] = {metric: vals[pick], "alias": cands[pick]["alias"],
                                      "max_centered_variance": float(np.max(centred ** 2))}
                sp = next(rp.parent.glob(f"samples_{pick}_*.jsonl"))
                preds[spec.task] = [{"doc_id": r["doc_id"], metric: r[metric]}
                                    for r in map(json.loads, sp.read_text(encoding="utf-8").splitlines())]
    return {"metadata": metadata, "results": results, "predictions": preds}


def recompute_results(submission: dict, config: LeaderboardConfig) -> dict:
    """``submission`` with every ``results`` value recomputed from its predictions (after a test edits them)."""
    out = {**submission, "results": {}}
    for spec in config.tasks:
        data = _records_to_data(spec.task, spec.metric, submission["predictions"][spec.task], "<test>")
        out["results"][spec.task] = {**submission["results"].get(spec.task, {}), spec.metric.value: metric_value(data)}
    return out


# ------------------------------------------------------------------------------------ a real PostgreSQL
def postgres_binaries() -> Path | None:
    """The folder with Debian's PostgreSQL server binaries (``initdb``, ``pg_ctl``), or ``None``."""
    import glob
    import os
    import shutil

    env = os.environ.get("MODELSEEK_PG_BIN")
    cands = [Path(env)] if env else []
    cands += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    initdb = shutil.which("initdb")
    if initdb:
        cands.append(Path(initdb).parent)
    return next((c for c in cands if (c / "initdb").exists() and (c / "pg_ctl").exists()), None)


POSTGRES_HINT = "apt-get install -y postgresql (or set MODELSEEK_PG_BIN to the folder holding initdb and pg_ctl)"


class PostgresServer:
    """A throw-away PostgreSQL server on 127.0.0.1 in a temporary folder (tests and benchmarks).

    PostgreSQL refuses to run as root: as root the cluster is created and run as the unprivileged
    ``nobody`` user (``runuser``). ``url(db)`` creates database ``db`` and returns its SQLAlchemy URL;
    ``stop()`` (or leaving the ``with`` block) stops the server and deletes the folder."""

    def __init__(self, folder: str | Path | None = None) -> None:
        import os
        import socket
        import subprocess
        import tempfile

        bins = postgres_binaries()
        if bins is None:
            raise RuntimeError(f"PostgreSQL server binaries not found: {POSTGRES_HINT}")
        self._own = folder is None
        self.folder = Path(folder or tempfile.mkdtemp(prefix="modelseek-pg-"))
        self.data = self.folder / "data"
        self.bins = bins
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._prefix: list[str] = []
        if os.geteuid() == 0:
            import pwd
            import shutil

            user = pwd.getpwnam("nobody")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self._prefix = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "nobody", "--"]
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        self._env = env
        subprocess.run([*self._prefix, str(bins / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                        "--no-sync", "-E", "UTF8", "--no-instructions"],
                       check=True, capture_output=True, env=env, cwd=self.folder)
        opts = (f"-h 127.0.0.1 -p {self.port} -k {self.folder} -F -c max_connections=200 "
                "-c shared_buffers=32MB -c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        subprocess.run([*self._prefix, str(bins / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l",
                        str(self.folder / "server.log"), "-w", "-t", "60", "start"],
                       check=True, capture_output=True, env=env, cwd=self.folder)
        self._running = True

    def url(self, database: str) -> str:
        import psycopg  # lazy: psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        import shutil
        import subprocess

        if self._running:
            subprocess.run([*self._prefix, str(self.bins / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w",
                            "stop"], capture_output=True, env=self._env, cwd=self.folder)
            self._running = False
        if self._own:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def publish_like_a_user(store, upload: bytes, source: str = "<upload>", session: str | None = None,
                        max_rounds: int = 1000) -> tuple[str, int]:
    """What a person does in the app: pre-submit, confirm, and while the board changed in between (the
    preview is stale) look at the recomputed preview and confirm again. Returns ``(model, recomputations)``."""
    from ..duel.storage import StalePreview  # lazy: pandas

    pv = store.presubmit(upload, source, session=session)
    for rounds in range(max_rounds):
        try:
            return store.confirm(pv.token, session=session), rounds
        except StalePreview:
            pv = store.refresh(pv.token, session=session)
    raise RuntimeError(f"still stale after {max_rounds} recomputations")  # pragma: no cover
