"""``finetune --tasks table.csv`` names its columns as ``rank`` does (issue #48 item 6): ``--text-col`` and
``--label-col``, the flags its own error points to."""

from __future__ import annotations

import pandas as pd


def test_finetune_a_table_with_its_own_column_names(cli, tmp_path, tiny_models, pool_yaml, recipe_yaml, fast_recipe):
    from modelseek.testing import make_text_task

    task = make_text_task("tbl", n_classes=2, n_train=40, n_val=0, n_test=0, seed=5)
    table = tmp_path / "reviews.csv"
    pd.DataFrame({"sentence": task.train.texts, "sentiment": task.train.labels}).to_csv(table, index=False)
    pool = pool_yaml(tmp_path / "pool.yaml", {"1": tiny_models["2"]})
    recipe = recipe_yaml(tmp_path / "recipe.yaml", fast_recipe.replace(max_epochs=1))
    out = tmp_path / "gt.csv"
    bad = cli("finetune", "--pool", pool, "--tasks", table, "--out", out, "--recipe", recipe)
    assert bad.code == 1 and "--text-col" in bad.err and len(bad.err.strip().splitlines()) == 1
    r = cli("finetune", "--pool", pool, "--tasks", table, "--out", out, "--recipe", recipe,
            "--text-col", "sentence", "--label-col", "sentiment")
    assert r.code == 0, r.err
    assert "1 done, 0 failed" in r.out
    gt = pd.read_csv(out, dtype={"task_id": str, "model_id": str})
    assert list(gt["task_id"]) == ["reviews"] and 0.0 <= float(gt["f1"].iloc[0]) <= 1.0
