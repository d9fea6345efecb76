"""Small tables for the EEVEE tests, generated here (no ../shared needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from modelseek.eevee import Table


def copied_signal_table(n_models: int = 24, n_noise: int = 6, seed: int = 0) -> Table:
    """Benchmark ``target`` and its exact copy ``copy`` (the only shared signal) plus independent noise
    benchmarks; every benchmark is its own task group."""
    rng = np.random.default_rng(seed)
    target = rng.normal(size=n_models)
    cols = {"target.acc": target, "copy.acc": target.copy()}
    for i in range(n_noise):
        cols[f"noise{i}.acc"] = rng.normal(size=n_models)
    import pandas as pd

    frame = pd.DataFrame(cols, index=[f"m{i}" for i in range(n_models)])
    return Table.from_frame(frame)


def write_gate_csv(path: Path, table: Table) -> Path:
    lines = ["Model," + ",".join(table.benchmarks), "Metric," + ",".join(table.metrics)]
    for m, row in zip(table.models, table.values):
        lines.append(m + "," + ",".join("" if np.isnan(v) else repr(float(v)) for v in row))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def signal_table() -> Table:
    return copied_signal_table()


@pytest.fixture
def small_gate(tmp_path: Path) -> Path:
    """A 10-model, 5-benchmark GATE-layout CSV with a missing cell and lower-is-better columns."""
    rng = np.random.default_rng(1)
    q = rng.normal(size=10)
    benches = ["b1", "b1", "b2", "b3", "b4", "b5"]
    metrics = ["acc@1", "loss", "acc@1", "dice-loss", "auc", "mae"]
    vals = np.stack([q + 0.1 * rng.normal(size=10), -q, q ** 2, -0.5 * q, rng.normal(size=10), q], axis=1)
    vals[3, 2] = np.nan
    t = Table(vals, tuple(f"model{i}" for i in range(10)), tuple(benches), tuple(metrics),
              tuple(m in ("loss", "dice-loss", "mae") for m in metrics))
    return write_gate_csv(tmp_path / "gate.csv", t)
