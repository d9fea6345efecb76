"""The plan is printed before anything but the prior is spent; an interrupted funnel resumes without redoing a
finished unit; a folder made with other settings, or a damaged state, is refused."""

from __future__ import annotations

import pytest

from modelseek import select
from modelseek.core.errors import InputError
from modelseek.testing.funnel import SimulatedBackend


class Interrupting(SimulatedBackend):
    """Raises KeyboardInterrupt on the ``n``-th call to features/finetune (as Ctrl-C would)."""

    def __init__(self, world, t, n):
        super().__init__(world, t)
        self.n, self.seen = n, 0

    def _tick(self):
        self.seen += 1
        if self.seen == self.n:
            raise KeyboardInterrupt

    def features(self, task, cands):
        self._tick()
        return super().features(task, cands)

    def finetune(self, task, cands, epochs):
        self._tick()
        return super().finetune(task, cands, epochs)


def _units(calls):
    return [(kind, c) for kind, ids in calls if kind != "prior" for c in ids]


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("stop_at", [2, 7])
def test_resume_does_not_redo_units(world, tmp_path, stop_at):
    task, budget = world.tasks[0], 6 * 3600
    whole = SimulatedBackend(world, 0)
    ref = select(task, world.pool, budget, tmp_path / "ref", backend=whole, epochs=5, chunk=4)
    assert len(_units(whole.calls)) > stop_at  # the interruption falls inside the work
    first = Interrupting(world, 0, stop_at)
    with pytest.raises(KeyboardInterrupt):
        select(task, world.pool, budget, tmp_path / "cut", backend=first, epochs=5, chunk=4)
    second = SimulatedBackend(world, 0)
    lines = []
    res = select(task, world.pool, budget, tmp_path / "cut", backend=second, epochs=5, chunk=4, echo=lines.append)
    assert any(line.startswith("resuming") for line in lines)
    assert [kind for kind, _ in second.calls].count("prior") == 0  # the prior was kept
    done_before = _units(first.calls)  # the interrupted call raised before it recorded itself: these finished
    assert done_before and not set(done_before) & set(_units(second.calls))  # nothing finished is run again
    assert res.run == ref.run.with_id(res.run.run_id) and res.finetuned == ref.finetuned
    assert res.total_spent_s <= budget
    third = SimulatedBackend(world, 0)  # a finished funnel reruns nothing
    again = select(task, world.pool, budget, tmp_path / "cut", backend=third, epochs=5, chunk=4)
    assert third.calls == [] and again.run == res.run


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_plan_printed_before_spending(world, tmp_path):
    events = []

    class Recording(SimulatedBackend):
        def features(self, task, cands):
            events.append("features")
            return super().features(task, cands)

        def finetune(self, task, cands, epochs):
            events.append("finetune")
            return super().finetune(task, cands, epochs)

    res = select(world.tasks[1], world.pool, "8h", tmp_path / "o", backend=Recording(world, 1), epochs=5,
                 echo=lambda s: events.append("plan: " + s))
    first_work = min(events.index("features"), events.index("finetune"))
    plan_at = next(i for i, e in enumerate(events) if e.startswith("plan: plan for a budget of 8h00m over 60 candidates"))
    measured_at = next(i for i, e in enumerate(events) if e.startswith("plan: policy: the 70 NTCIR-19"))
    assert measured_at < plan_at < first_work and res.plan.k1 > 0
    assert any("expected nDCG@5 (nested" in e for e in events[:plan_at])


def test_plan_only_spends_nothing_beyond_the_prior(world, tmp_path):
    be = SimulatedBackend(world, 2)
    res = select(world.tasks[2], world.pool, "8h", tmp_path / "o", backend=be, plan_only=True)
    assert res.status == "planned" and [k for k, _ in be.calls] == ["prior"]
    assert not (tmp_path / "o" / "run.trec").exists() and res.plan.k1 > 0
    # the real run afterwards follows the stored plan
    run = select(world.tasks[2], world.pool, "8h", tmp_path / "o", backend=SimulatedBackend(world, 2))
    assert run.plan == res.plan and (tmp_path / "o" / "run.trec").exists()


def test_plan_only_does_not_lock_the_folder_to_its_budget(world, tmp_path):
    out = tmp_path / "o"
    backends = [SimulatedBackend(world, 0) for _ in range(3)]
    one = select(world.tasks[0], world.pool, "1h", out, backend=backends[0], plan_only=True)
    two = select(world.tasks[0], world.pool, "8h", out, backend=backends[1], plan_only=True)
    assert (one.plan.budget_s, two.plan.budget_s) == (3600.0, 8 * 3600.0) and two.plan.total_s > one.plan.total_s
    done = select(world.tasks[0], world.pool, "2h", out, backend=backends[2])
    assert done.plan.budget_s == 7200.0 and done.status.startswith("done") and done.total_spent_s <= 7200.0
    # every second is reported: what the plan-only runs spent on their clocks is in the total of the run that
    # continues (the prior ran once and was kept)
    assert [k for k, _ in backends[1].calls] == [] and one.spent_s["prior"] > 0
    assert done.total_spent_s == pytest.approx(sum(b.now for b in backends))


def test_other_settings_or_damaged_state_refused(world, tmp_path):
    out = tmp_path / "o"
    select(world.tasks[0], world.pool, "1h", out, backend=SimulatedBackend(world, 0))
    with pytest.raises(InputError, match="budget_s=3600.0") as exc:  # work was done under the old budget
        select(world.tasks[0], world.pool, "2h", out, backend=SimulatedBackend(world, 0))
    assert exc.value.field == "budget_s"
    with pytest.raises(InputError) as exc:
        select(world.tasks[1], world.pool, "1h", out, backend=SimulatedBackend(world, 1))
    assert exc.value.field == "task"
    state = out / "state.json"
    state.write_text(state.read_text().replace('"runs":1', '"runs":7'))
    with pytest.raises(InputError, match="checksum"):
        select(world.tasks[0], world.pool, "1h", out, backend=SimulatedBackend(world, 0))


def test_interrupted_unit_time_counts_as_spent(world, tmp_path):
    class SlowThenCut(SimulatedBackend):
        def features(self, task, cands):
            self.now += 100.0  # a hundred seconds into the unit, then Ctrl-C
            raise KeyboardInterrupt

    cut = SlowThenCut(world, 0)
    with pytest.raises(KeyboardInterrupt):
        select(world.tasks[0], world.pool, "2h", tmp_path / "o", backend=cut)
    resumed = SimulatedBackend(world, 0)
    res = select(world.tasks[0], world.pool, "2h", tmp_path / "o", backend=resumed)
    assert res.spent_s["features"] == pytest.approx(100.0 + sum(
        world.costs[c].features(1000) for _, ids in resumed.calls if _ == "features" for c in ids))
    assert res.total_spent_s <= 2 * 3600


def test_the_library_refuses_an_out_folder_that_holds_its_input(tmp_path):
    """``ms.select`` keeps the rule of every writing command (#52): an ``out`` that would overwrite the history it
    learns from (its ``finetuned.csv``) or that is the task's own folder is refused before any work, bytes unchanged."""
    import modelseek as ms
    from modelseek.core.errors import InputError

    out = tmp_path / "out"
    out.mkdir()
    history = out / "finetuned.csv"
    history.write_text("task_id,model_id,f1\nt,m,0.5\n")
    pool = tmp_path / "pool.yaml"
    pool.write_text("models: []\n")
    task = tmp_path / "task.csv"
    task.write_text("text,label\na,0\nb,1\n")
    before = history.read_bytes()
    with pytest.raises(InputError, match=r"out.*history|history.*out"):
        ms.select(str(task), str(pool), "1h", str(out), history=str(history), plan_only=True)
    assert history.read_bytes() == before
    with pytest.raises(InputError, match="out"):
        ms.select(str(out), str(pool), "1h", str(out), plan_only=True)
