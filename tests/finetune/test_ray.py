"""The Ray executor on a local Ray instance (num_cpus=2), shared by the tests of this module: identical
ground truth to the local executor on the same seeds, and a worker that dies mid-grid."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelseek.retrieval.finetune import run_grid
from modelseek.testing import make_ntcir_layout
from modelseek.testing.finetune import CrashOnce
from modelseek.testing.ray_local import local_ray

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray instance for the module. Its workers inherit PYTHONPATH (this checkout's sources, so
    the executor's probe finds them there and ships nothing) and stay alive between grids (each worker
    start imports torch and transformers)."""
    with local_ray(num_cpus=2, src=Path(__file__).resolve().parents[2] / "src"):
        yield


@pytest.fixture(scope="module")
def grid_inputs(tmp_path_factory, tiny_models, pool_yaml_module, recipe_yaml_module, fast_recipe_module):
    root = tmp_path_factory.mktemp("raygrid")
    layout = make_ntcir_layout(root / "layout", n_tasks=2, n_models=2, n_train=48, n_val=12, n_test=16)
    (layout / "ground-truth.csv").unlink()
    pool = pool_yaml_module(root / "pool.yaml", {k: tiny_models[k] for k in ("1", "2")})
    recipe = recipe_yaml_module(root / "recipe.yaml", fast_recipe_module)
    return root, layout, pool, recipe


@pytest.mark.slow(reason="52 s (setup and call) on 2 busy cores")
def test_ray_and_local_give_identical_ground_truth(ray_instance, grid_inputs, cli):
    root, layout, pool, recipe = grid_inputs
    common = ["--pool", pool, "--tasks", layout, "--recipe", recipe, "--seeds", "0", "1"]
    local = cli("finetune", *common, "--out", root / "local.csv")
    assert local.code == 0, local.err
    remote = cli("finetune", *common, "--out", root / "ray.csv", "--executor", "ray")
    assert remote.code == 0, remote.err
    assert "8 done, 0 failed" in remote.out
    assert (root / "ray.csv").read_bytes() == (root / "local.csv").read_bytes()


@pytest.mark.slow(reason="20 s (setup and call) on 2 busy cores")
def test_worker_dies_mid_grid(ray_instance, grid_inputs, tiny_pool, tiny_tasks, fast_recipe, tmp_path):
    marker = tmp_path / "crashed"
    trainer = CrashOnce(str(marker), task_id="t0", model_id="2")
    g = run_grid(tiny_tasks, tiny_pool, tmp_path / "r.sqlite", recipe=fast_recipe, executor="ray", trainer=trainer)
    assert marker.exists()  # the worker did die (os._exit) on its first attempt
    assert (g.n_done, g.n_failed) == (4, 0)  # Ray retried it; the grid finished
    assert len(g.store.attempts()) == 4 and {a["status"] for a in g.store.attempts()} == {"done"}
    local = run_grid(tiny_tasks, tiny_pool, tmp_path / "l.sqlite", recipe=fast_recipe)
    assert g.ground_truth().frame.equals(local.ground_truth().frame)


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_worker_dying_every_time_is_recorded_and_grid_goes_on(ray_instance, tiny_pool, tiny_tasks, fast_recipe,
                                                              tmp_path):
    marker = tmp_path / "crashed"
    trainer = CrashOnce(str(marker), task_id="t1", model_id="1")
    g = run_grid([tiny_tasks[1]], tiny_pool, tmp_path / "r.sqlite", recipe=fast_recipe, executor="ray",
                 trainer=trainer, max_retries=0)
    assert (g.n_done, g.n_failed) == (1, 1)
    (job, error), = g.failed_jobs()
    assert job.model.model_id == "1" and "ray" in error and "0 retries" in error
    again = run_grid([tiny_tasks[1]], tiny_pool, tmp_path / "r.sqlite", recipe=fast_recipe, executor="ray",
                     trainer=trainer, retry_failed=True)  # the marker exists now: the retry succeeds
    assert (again.ran, again.n_done, again.n_failed) == (1, 2, 0)
