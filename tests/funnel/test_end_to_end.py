"""End to end on tiny real models: the shipped prior, a real frozen-feature estimator, measured and cached costs,
fine-tuning through the job store (the fake trainer from modelseek.testing, and once the real one from the CLI)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from modelseek import read_run, select  # noqa: E402
from modelseek.retrieval.data.pool import Candidate, Pool  # noqa: E402
from modelseek.retrieval.funnel import MeasuredCosts  # noqa: E402
from modelseek.testing import make_text_task, write_task_table  # noqa: E402
from modelseek.testing.finetune import FakeTrainer, make_learnable_bert  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("funnel-models")
    return {f"m{i}": make_learnable_bert(root / f"m{i}", seed=i, layers=1, hidden=16 + 8 * i) for i in range(3)}


@pytest.fixture(scope="module")
def task():
    return make_text_task("tiny", n_classes=2, n_train=48, n_val=12, n_test=12, seed=5, noise=0.05)


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow(reason="15 s (setup and call) on 2 busy cores")
def test_select_with_fake_trainer_then_resume(tmp_path, models, task):
    from modelseek.retrieval.finetune import Recipe

    pool = Pool([Candidate(id=k, path=str(v)) for k, v in models.items()], name="tiny")
    log = tmp_path / "trainer.log"
    recipe = Recipe(lr=5e-3, cpu_threads=1)
    lines: list[str] = []
    res = select(task, pool, "1h", tmp_path / "out", recipe=recipe, epochs=2, trainer=FakeTrainer(log=str(log)),
                 echo=lines.append)
    assert lines[0].startswith("policy: the 70 NTCIR-19 training tasks")  # the policy walked, the plan's inputs
    assert any(x.startswith("plan for a budget of 1h00m over 3 candidates") for x in lines)
    # an hour fine-tunes all three tiny models: straight from the prior, no estimators needed
    assert res.status == "done" and (res.plan.k1, res.plan.finetune_k) == (0, 3)
    assert set(res.spent_s) == {"prior", "probe", "replay", "features", "finetune"} and res.spent_s["probe"] > 0
    ran = log.read_text().splitlines()
    assert len(ran) == len(res.finetuned) >= 1  # the fake trainer ran once per fine-tuned candidate
    for row in res.finetuned:  # the job store's results are the trainer's
        assert row["status"] == "done" and row["f1"] == pytest.approx(FakeTrainer.f1(task.id, row["model_id"], 0))
    on_disk = read_run(tmp_path / "out" / "run.trec")
    assert on_disk.ranking(task.id) == res.run.ranking(task.id) and sorted(res.run.ranking(task.id)) == sorted(models)
    assert (tmp_path / "out" / "finetuned.csv").read_text().count("\n") == len(res.finetuned) + 1
    # costs were measured once per probed model and cached: a new cost model reads them without probing
    costs = MeasuredCosts(task, "logme", recipe)
    assert costs.prepare([pool[c] for c in res.run.ranking(task.id)]) >= 0
    assert costs.probe_seconds == 0.0 or len(costs.measured) <= 3
    cached = [c for c in pool if costs.cached(c) is not None]
    assert cached and all(costs.cached(c).load_s >= 0 for c in cached)
    # the rerun continues (here: has nothing left) and runs no job again
    again = select(task, pool, "1h", tmp_path / "out", recipe=recipe, epochs=2, trainer=FakeTrainer(log=str(log)))
    assert log.read_text().splitlines() == ran and again.run == res.run and again.ran_units == []


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_estimators_when_fine_tuning_does_not_fit(tmp_path, models, task):
    from modelseek.retrieval.finetune import Recipe

    pool = Pool([Candidate(id=k, path=str(v)) for k, v in models.items()], name="tiny")
    log = tmp_path / "trainer.log"
    # a fine-tuning of 10 million epochs fits no budget: the plan is the estimators (logme, through modelseek.rank)
    res = select(task, pool, "1h", tmp_path / "out", recipe=Recipe(lr=5e-3, cpu_threads=1), epochs=10 ** 7,
                 trainer=FakeTrainer(log=str(log)))
    assert (res.plan.k1, res.plan.finetune_k) == (3, 0) and res.finetuned == [] and not log.exists()
    import json

    state = json.loads((tmp_path / "out" / "state.json").read_text().split("\n", 1)[1])
    assert sorted(state["features"]) == ["m0", "m1", "m2"] and state["spent"]["features"] > 0
    from modelseek import rank

    logme = rank(task, pool, method="logme").scores(task.id)
    assert state["features"] == pytest.approx(logme)  # the stage's scores are the public API's


def test_cost_cache_is_verified(tmp_path, models, task):
    from modelseek.retrieval.finetune import Recipe

    c = Candidate(id="m0", path=str(models["m0"]))
    costs = MeasuredCosts(task, "logme", Recipe(lr=5e-3, cpu_threads=1, max_length=32))
    measured = costs.measure(c)
    assert costs.cached(c) == measured and measured.feature_s_per_1k > 0 and measured.finetune_s_per_epoch_1k > 0
    path, _ = costs._path(c)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # a damaged entry is not trusted: it is dropped and measured again
    path.write_bytes(bytes(data))
    assert costs.cached(c) is None and not path.exists()


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_cli_select_real_finetuning(cli, tmp_path, models, task):
    data = write_task_table(task, tmp_path / "task.csv")
    pool = tmp_path / "pool.yaml"
    pool.write_text("candidates:\n" + "".join(f'  - {{id: "{k}", path: "{v}"}}\n' for k, v in models.items()),
                    encoding="utf-8")
    args = ("select", data, "--pool", pool, "--budget", "30m", "--out", tmp_path / "o", "--epochs", "1",
            "--set", "lr=0.005", "--set", "cpu_threads=1")
    planned = cli(*args, "--plan-only")
    assert planned.code == 0, planned.err
    out = planned.out
    assert out.startswith("policy: the 70 NTCIR-19 training tasks") and "planned;" in out
    # the policy walked, with its nested figures, comes before the plan made with its measured reliability
    assert out.index("(within-task rank correlation") < out.index("expected nDCG@5 (nested") \
        < out.index("planning with reliabilities: prior 0.") < out.index("plan for a budget of 30m over 3 candidates")
    assert not (tmp_path / "o" / "run.trec").exists()
    r = cli(*args)
    assert r.code == 0, r.err
    # "top N" never names more than the pool holds (3 here)
    assert r.out.index("plan for a budget") < r.out.index("resuming") < r.out.index("top 3:") and "top 5" not in r.out
    run = read_run(tmp_path / "o" / "run.trec")
    top = r.out.split("top 3: ")[1].splitlines()[0].split(", ")
    assert run.ranking(next(iter(run))) == top and sorted(top) == ["m0", "m1", "m2"]
    rows = (tmp_path / "o" / "finetuned.csv").read_text().splitlines()
    assert rows[0] == "model_id,val_f1,f1,epochs,status,error" and len(rows) >= 2
    assert all(",done," in row for row in rows[1:])
    # a rerun with --json resumes the finished funnel: nothing is trained again, the same answer
    import json

    again = cli(*args, "--json")
    assert again.code == 0, again.err
    summary = json.loads(again.out)
    assert summary["ranking"] == top and summary["status"].startswith("done")
    m = summary["policy"]  # the shipped policy walked: where it was measured, its figures labelled as nested
    assert summary["measured"] is None and m["measured_on"].startswith("the 70 NTCIR-19") and m["tasks"] == 70
    assert [b["k"] for b in m["figures"]["budgets"]] == [0, 1, 3, 5, 10] and 0 < m["reliability"] < 1
    assert summary["plan"] is not None and m["order"] == "prior" and m["noise"] == 0.0
    assert m["prior_form"] == "avgrank" and set(m["merge"]) == {str(k) for k in range(1, 11)}
    assert m["figures"]["kind"].startswith("nested") and "not withheld" in m["figures"]["kind"]
    assert summary["final_ranking"].startswith(("by expected official gain", "fine-tuned first"))
    assert summary["total_spent_s"] <= summary["budget_s"] and summary["left_undone"] == []
    assert [r["model_id"] for r in summary["finetuned"]] == [row.split(",")[0] for row in rows[1:]]


def test_prior_for_hub_ids_without_history(tmp_path, task):
    """Stage 1 on a plain list of Hub ids, offline: candidates the default has no fine-tuning history for are
    ranked from their profiles (family prior, card evidence), never refused."""
    from modelseek.retrieval.data.pool import ntcir_pool
    from modelseek.retrieval.funnel import read_id_list
    from modelseek.retrieval.funnel.backend import RealBackend

    known = [c.hf_id for c in ntcir_pool()][:3]
    f = tmp_path / "ids.txt"
    f.write_text("\n".join(known + ["someone/bert-base-uncased-finetuned-x", "someone/never-seen"]) + "\n")
    pool = read_id_list(f)
    scores = RealBackend(tmp_path / "s.sqlite").prior(task, pool)
    assert set(scores) == set(pool.ids) and all(np.isfinite(v) for v in scores.values())


@pytest.mark.slow(reason="30 s: a 30-second budget spent for real on the tiny pool")
def test_select_budget_holds_on_the_tiny_pool(cli, tmp_path, models, task):
    """``select --budget 30s`` spends at most 30 s plus one job's margin, by the command's own clock (what it
    reports, stage by stage); the plan's fine-tuning estimate is within 2x of what the fine-tunes took; every job
    is reported as it runs."""
    import json

    data = write_task_table(task, tmp_path / "task.csv")
    pool = tmp_path / "pool.yaml"
    pool.write_text("candidates:\n" + "".join(f'  - {{id: "{k}", path: "{v}"}}\n' for k, v in models.items()),
                    encoding="utf-8")
    args = ("select", data, "--pool", pool, "--budget", "30s", "--out", tmp_path / "o", "--epochs", "10",
            "--set", "lr=0.005", "--set", "cpu_threads=1")
    r = cli(*args, "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    costs = doc["finetune_costs"]
    margin = max((c["spent_s"] for c in costs.values()), default=0.0)
    assert doc["budget_s"] == 30.0 and doc["total_spent_s"] <= 30.0 + margin
    assert doc["total_spent_s"] == pytest.approx(sum(doc["spent_s"].values()))
    if costs:  # the plan's estimate of the fine-tunes it made, against what they took
        planned = sum(c["planned_s"] for c in costs.values())
        spent = sum(c["spent_s"] for c in costs.values())
        assert 0.5 <= spent / planned <= 2.0, costs
        assert [x["model_id"] for x in doc["finetuned"]] and set(costs) == {x["model_id"] for x in doc["finetuned"]}
    else:  # nothing fitted after the fixed stages: said so, with what was left undone
        assert doc["left_undone"] and "left undone" in doc["status"]
    # progress during fine-tuning, in the text output of the same funnel (resumed: nothing runs twice)
    text = cli(*args)
    assert text.code == 0 and "of 30s" in text.out and f"top {len(models)}:" in text.out


def test_indistinguishable_finetunes_are_warned():
    from modelseek.retrieval.funnel.run import chance_f1, indistinguishable

    t = make_text_task("chance", n_classes=8, n_train=64, n_val=64, n_test=8, seed=1)
    chance = chance_f1(list(t.val.labels))
    assert 0 < chance < 1 / 8  # a constant prediction scores on one class of eight
    rows = [{"model_id": f"m{i}", "status": "done", "val_f1": 0.125} for i in range(4)]
    assert "at chance" in indistinguishable(t, rows, 0.01)
    apart = [{"model_id": "a", "status": "done", "val_f1": 0.9}, {"model_id": "b", "status": "done", "val_f1": 0.6}]
    assert indistinguishable(t, apart, 0.01) == ""
    close = [{"model_id": "a", "status": "done", "val_f1": 0.9}, {"model_id": "b", "status": "done", "val_f1": 0.89}]
    assert "seed-noise" in indistinguishable(t, close, 0.01)
    assert indistinguishable(t, rows[:1], 0.01) == ""  # one fine-tune: nothing to tell apart


@pytest.mark.slow(reason="5 s: two real fine-tunes of tiny models")
def test_rank_verify_top_prints_the_funnels_final_ranking(cli, tmp_path, models, task):
    from modelseek.retrieval.funnel.curve import rerank

    data = write_task_table(task, tmp_path / "task.csv")
    pool = tmp_path / "pool.yaml"
    pool.write_text("candidates:\n" + "".join(f'  - {{id: "{k}", path: "{v}"}}\n' for k, v in models.items()),
                    encoding="utf-8")
    r = cli("rank", data, "--pool", pool, "-m", "random", "--verify-top", "2", "--finetune-store",
            tmp_path / "v.sqlite", "--set", "lr=0.005", "--set", "cpu_threads=1", "--set", "max_epochs=1",
            "-o", tmp_path / "run.trec")
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if x.startswith("final ranking "))
    written = read_run(tmp_path / "run.trec")
    order = written.ranking(next(iter(written)))
    import csv
    import io

    # the verification table's validation F1 of the two fine-tuned, ranked as the funnel ranks them
    body = r.out.split("fine-tuned top 2")[1].splitlines()[1:4]
    rows = list(csv.reader(io.StringIO("\n".join(" ".join(x.split()) for x in body)), delimiter=" "))
    head = rows[0]
    vals = {row[head.index("model_id")]: float(row[head.index("val_f1")]) for row in rows[1:]}
    ranking, how = rerank(order, vals)
    assert line == f"final ranking {how}: " + ", ".join(ranking)
    assert sorted(ranking) == sorted(models)
