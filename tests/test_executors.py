"""Issue #38 (item 4): one executor protocol behind fine-tuning grids and frozen-feature candidate jobs.

The contract runs over every registered executor (Ray's as a slow test); a throwaway thread-pool executor,
written here and nowhere else, is registered in the package's registry and, from a throwaway distribution, by
one entry point in the group ``modelseek.executors``; it runs a fine-tuning grid and frozen-feature scoring
(``--executor threads``) with the same results as the local executor."""

from __future__ import annotations

import inspect
import operator
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import ClassVar

import pytest

import modelseek
from modelseek.retrieval.data.pool import Candidate, Pool
from modelseek.core.errors import InputError
from modelseek import register
from modelseek.testing.plugins import install_distribution, plugin_env
from modelseek.retrieval.executors import EXECUTORS, Executor, Outcome, Shared, Unit, make_executor
from modelseek.retrieval.finetune import run_grid
from modelseek.core.registry import UnknownNameError
from modelseek.testing import make_text_task
from modelseek.testing.finetune import FakeTrainer

SRC = str(Path(modelseek.__file__).resolve().parents[1])

class Threads:
    """Units on a pool of threads; outcomes handed back in the calling thread as they finish."""

    name: ClassVar[str] = "threads"
    in_process: ClassVar[bool] = True
    concurrency: ClassVar[str] = "threads"
    ran: ClassVar[list[tuple[str, str]]] = []  # (unit key, thread name) of every unit run

    def __init__(self, workers: int = 2) -> None:
        self.workers = workers

    def _call(self, unit: Unit) -> Outcome:
        Threads.ran.append((unit.key, threading.current_thread().name))
        return unit.call()

    def run(self, units, on_start, on_done) -> None:
        with ThreadPoolExecutor(self.workers, thread_name_prefix="ms-threads") as pool:
            futures = {}
            for unit in units:
                attempt = on_start(unit)
                if attempt is not None:
                    futures[pool.submit(self._call, unit)] = (unit, attempt)
            for f in as_completed(futures):
                unit, attempt = futures[f]
                on_done(unit, f.result(), attempt)


#: the plugin module of the throwaway distribution: the same class, in a file of its own
THREADS = ("from __future__ import annotations\nimport threading\nfrom concurrent.futures import ThreadPoolExecutor, "
           "as_completed\nfrom typing import ClassVar\nfrom modelseek.retrieval.executors import Outcome, Unit\n\n\n"
           + inspect.getsource(Threads))


@pytest.fixture
def threads():
    import modelseek.retrieval.executors as executors

    register("executor", Threads)
    Threads.ran.clear()
    executors._WARM.clear()  # which unit functions ran in this process (each test starts from none)
    yield Threads
    EXECUTORS.unregister("threads")


# ------------------------------------------------------------------------------------------ the contract
def _contract_params():
    out = []
    for name in EXECUTORS.names():
        if EXECUTORS.get(name).in_process:
            out.append(name)
        else:
            out.append(pytest.param(name, marks=pytest.mark.slow(reason=f"{name} starts a cluster (about 10 s)")))
    return out


@pytest.mark.parametrize("name", _contract_params())
def test_every_registered_executor_keeps_the_protocol(name):
    """Claims are asked before dispatch and a refused claim is never run; each dispatched unit has one outcome,
    with its attempt, in the calling thread; shared arguments arrive as values; an exception is the outcome's
    error and the others go on."""
    if name == "ray":
        pytest.importorskip("ray")
    cls = EXECUTORS.get(name)
    assert isinstance(cls(), Executor) and cls.name == name
    units = [Unit("sum", operator.add, (Shared("forty", 40), 2)), Unit("held", operator.add, (1, 1)),
             Unit("zero", operator.truediv, (1, 0)), Unit("again", operator.mul, (Shared("forty", 40), 2))]
    attempts = {"sum": 3, "held": None, "zero": 1, "again": 7}
    asked: list[str] = []
    done: dict[str, tuple[Outcome, int, int]] = {}

    def on_start(unit: Unit) -> int | None:
        asked.append(unit.key)
        return attempts[unit.key]

    def on_done(unit: Unit, outcome: Outcome, attempt: int) -> None:
        assert unit.key not in done
        done[unit.key] = (outcome, attempt, threading.get_ident())

    make_executor(name).run(units, on_start, on_done)
    assert sorted(asked) == sorted(attempts)
    assert sorted(done) == ["again", "sum", "zero"]  # the held unit was skipped
    assert {k: (o.key, o.value, a) for k, (o, a, _) in done.items() if o.ok} == {"sum": ("sum", 42, 3),
                                                                               "again": ("again", 80, 7)}
    zero, attempt, _ = done["zero"]
    assert not zero.ok and zero.value is None and attempt == 1
    assert zero.error == "ZeroDivisionError: division by zero"
    assert {t for _, _, t in done.values()} == {threading.get_ident()}


def test_make_executor_refuses_what_it_cannot_make(threads):
    assert EXECUTORS.names()[:2] == ["local", "ray"] and "threads" in EXECUTORS.names()
    with pytest.raises(UnknownNameError, match=r"unknown executor 'thread'\. Did you mean 'threads'"):
        make_executor("thread")
    with pytest.raises(InputError, match=r"address is for the ray executor.*'threads' takes none"):
        make_executor("threads", address="auto")
    with pytest.raises(InputError, match=r"'local' takes no option 'max_retries'"):
        make_executor("local", max_retries=2)
    assert make_executor("threads", workers=3).workers == 3
    ray = make_executor("ray", address="auto", max_retries=0)
    assert (ray.address, ray.max_retries) == ("auto", 0)

    class NoFlag:
        name = "noflag"

        def run(self, units, on_start, on_done):
            pass

    with pytest.raises(TypeError, match="class attribute 'in_process'"):
        register("executor", NoFlag)
    NoFlag.in_process = True
    with pytest.raises(TypeError, match="class attribute 'concurrency': one of serial, threads, processes"):
        register("executor", NoFlag)
    NoFlag.concurrency = "processes"
    with pytest.raises(TypeError, match="in_process=True contradicts concurrency='processes'"):
        register("executor", NoFlag)
    NoFlag.concurrency = "serial"
    NoFlag.run = lambda self, units: None
    with pytest.raises(TypeError, match=r"NoFlag.run must take \(units, on_start, on_done\)"):
        register("executor", NoFlag)
    with pytest.raises(ValueError, match="duplicate executor name: 'threads'"):
        register("executor", Threads)


def test_run_until_done_refuses_a_store_where_a_job_is_neither_finished_nor_claimable(tmp_path):
    from modelseek.retrieval.executors import run_until_done
    from modelseek.retrieval.finetune import JobStore

    unit = Unit("k", operator.add, (1, 2))
    # nobody holds the key, yet every claim of it is refused: waiting would never end
    with JobStore(tmp_path / "jobs.sqlite") as store, \
            pytest.raises(InputError, match=r"1 job\(s\) are neither finished nor claimable.*; remove it") as err:
        run_until_done(make_executor("local"), lambda: [unit], lambda u: None, lambda u, o, a: None, store, 0.01,
                       "remove it")
    assert str(tmp_path / "jobs.sqlite") in str(err.value)
    done: list[Outcome] = []
    with JobStore(tmp_path / "jobs.sqlite") as store:  # a unit that runs leaves nothing pending: one call
        run_until_done(make_executor("local"), lambda: [] if done else [unit], lambda u: 1,
                       lambda u, o, a: done.append(o), store, 0.01, "remove it")
    assert [o.value for o in done] == [3]


# ------------------------------------------------------------------------------------------ a registered executor
def test_a_registered_executor_runs_a_fine_tuning_grid_and_resumes(threads, tmp_path):
    tasks = [make_text_task(f"t{i}", n_train=12, n_val=6, n_test=6, seed=i) for i in range(2)]
    pool = Pool([Candidate(id=f"m{i}", path=f"/nonexistent/m{i}") for i in range(3)], name="fake")
    local = run_grid(tasks, pool, tmp_path / "local.sqlite", seeds=[0, 1], trainer=FakeTrainer())
    grid = run_grid(tasks, pool, tmp_path / "threads.sqlite", seeds=[0, 1], trainer=FakeTrainer(delay=0.02),
                    executor="threads")
    assert (grid.ran, grid.n_done, grid.n_failed) == (12, 12, 0)
    # the first job ran alone in this thread (its function's imports done before threads start), the others once
    # each in the executor's threads
    assert len(Threads.ran) == 11 and len({k for k, _ in Threads.ran} | {j.key for j in grid.jobs}) == 12
    assert {t for _, t in Threads.ran} <= {"ms-threads_0", "ms-threads_1"}
    assert grid.ground_truth(tasks).frame.equals(local.ground_truth(tasks).frame)
    again = run_grid(tasks, pool, tmp_path / "threads.sqlite", seeds=[0, 1], trainer=FakeTrainer(),
                     executor="threads")
    assert (again.skipped, again.ran) == (12, 0) and len(Threads.ran) == 11  # resumed: nothing dispatched
    one = run_grid(tasks, pool, tmp_path / "instance.sqlite", seeds=[0], trainer=FakeTrainer(),
                   executor=Threads(workers=1))  # an instance, not a name
    # the unit function has run in this process: every job of a later grid goes to the threads
    assert one.ran == 6 and len(Threads.ran) == 17 and {t for _, t in Threads.ran[11:]} == {"ms-threads_0"}


@pytest.fixture(scope="module")
def task_and_pool(tmp_path_factory) -> tuple[Path, Path]:
    pytest.importorskip("transformers")
    from modelseek.testing import write_task_table
    from modelseek.testing.tiny_models import write_tiny_pool

    root = tmp_path_factory.mktemp("executor-task")
    table = write_task_table(make_text_task("t1", 3, 40, 12, 12, seed=1), root / "task.csv")
    return table, write_tiny_pool(root, hidden_size=16)


def _rank(table: Path, pool: Path, cache: Path, out: Path, *extra: object) -> list[object]:
    return ["rank", table, "--pool", pool, "-m", "logme", "-o", out, "--param", f"cache_dir={cache}", *extra]


@pytest.fixture(scope="module")
def local_run(task_and_pool, tmp_path_factory) -> bytes:
    from modelseek.testing.cli import run_cli

    root = tmp_path_factory.mktemp("local-run")
    r = run_cli(*_rank(*task_and_pool, root / "cache", root / "run.txt"))
    assert r.code == 0, r.err
    return (root / "run.txt").read_bytes()


@pytest.mark.slow(reason="three tiny BERTs featurised twice (about 6 s)")
def test_a_registered_executor_scores_frozen_features_through_the_cli(threads, task_and_pool, local_run, cli,
                                                                     tmp_path):
    out = tmp_path / "run.txt"
    r = cli(*_rank(*task_and_pool, tmp_path / "cache", out, "--executor", "threads"))
    assert r.code == 0, r.err
    assert out.read_bytes() == local_run  # the same scores, to the last digit
    assert len(Threads.ran) == 2 and {t for _, t in Threads.ran} <= {"ms-threads_0", "ms-threads_1"}  # 1 alone
    again = cli(*_rank(*task_and_pool, tmp_path / "cache", out, "--executor", "threads"))
    assert again.code == 0 and out.read_bytes() == local_run and len(Threads.ran) == 2  # read from the store
    # a method that runs no candidate model takes no executor but the local one
    r = cli("rank", task_and_pool[0], "--pool", task_and_pool[1], "-m", "random", "--executor", "threads")
    assert r.code == 1 and "runs no candidate model: --executor 'threads'" in r.err


# ------------------------------------------------------------------------------------------ from a distribution
def _distribution(site: Path, entry_points: str) -> Path:
    return install_distribution(site, "ms_executor_demo", {"ms_executor_demo": THREADS}, entry_points)


def _env(site: Path) -> dict[str, str]:
    return plugin_env(site)


@pytest.mark.slow(reason="three fresh interpreters, one featurising three tiny BERTs (about 8 s)")
def test_an_entry_point_executor_runs_through_the_cli(task_and_pool, local_run, cli_subprocess, tmp_path):
    site = _distribution(tmp_path / "site", "[modelseek.executors]\nthreads = ms_executor_demo:Threads\n")
    r = cli_subprocess("finetune", "--help", env=_env(site))
    assert r.code == 0 and "{local,ray,threads}" in r.out.replace("\n", "").replace(" ", "")
    out = tmp_path / "run.txt"
    r = cli_subprocess(*_rank(*task_and_pool, tmp_path / "cache", out, "--executor", "threads"), env=_env(site))
    assert r.code == 0, r.err
    assert out.read_bytes() == local_run
    r = cli_subprocess("select", task_and_pool[0], "--pool", task_and_pool[1], "--budget", "1h", "--out",
                       tmp_path / "funnel", "--executor", "thread", env=_env(site))
    assert r.code == 2 and "invalid choice: 'thread'" in r.err and "'threads'" in r.err


def test_an_entry_point_named_as_a_built_in_executor_is_refused_naming_both(tmp_path):
    site = _distribution(tmp_path / "site", "[modelseek.executors]\nlocal = ms_executor_demo:Threads\n")
    code = ("from modelseek.retrieval.executors import EXECUTORS; print(EXECUTORS.names()); EXECUTORS.get('ray'); "
            "EXECUTORS.get('local')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **_env(site)})
    assert p.returncode == 1 and p.stdout.strip() == "['local', 'ray']"  # listed; only using the name fails
    assert "executor 'local'" in p.stderr and "'ms_executor_demo:Threads'" in p.stderr
    assert "modelseek.retrieval.executors.local" in p.stderr


@pytest.mark.slow(reason="the funnel twice on three tiny BERTs with the fake trainer (about 15 s)")
def test_the_funnel_runs_its_feature_and_fine_tuning_jobs_on_the_executor(threads, tmp_path):
    pytest.importorskip("transformers")
    from modelseek import select
    from modelseek.retrieval.finetune import Recipe
    from modelseek.testing.finetune import make_learnable_bert

    task = make_text_task("tiny", n_classes=2, n_train=32, n_val=8, n_test=8, seed=5)
    pool = Pool([Candidate(id=f"m{i}", path=str(make_learnable_bert(tmp_path / f"m{i}", seed=i, layers=1,
                                                                    hidden=16))) for i in range(3)], name="tiny")
    recipe = Recipe(lr=5e-3, cpu_threads=1)
    # no fine-tuning of 10 million epochs fits an hour: the plan is the estimators, run as candidate jobs
    res = select(task, pool, "1h", tmp_path / "features", recipe=recipe, epochs=10 ** 7, trainer=FakeTrainer(),
                 executor="threads")
    assert res.plan.finetune_k == 0 and sorted(res.run.ranking(task.id)) == ["m0", "m1", "m2"]
    assert len(Threads.ran) == 2  # one candidate job per model: the first alone, the others on the threads
    Threads.ran.clear()
    res = select(task, pool, "1h", tmp_path / "finetune", recipe=recipe, epochs=2, trainer=FakeTrainer(),
                 executor="threads")
    assert res.status == "done" and res.finetuned and all(r["status"] == "done" for r in res.finetuned)
    assert len(Threads.ran) == len(res.finetuned) - 1  # each fine-tuning a job, the first alone
    with pytest.raises(InputError, match="address is for the ray executor"):
        select(task, pool, "1h", tmp_path / "bad", executor="threads", address="auto")
