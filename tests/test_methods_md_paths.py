"""METHODS.md is shared with the organisers: it names no local path of the machine that wrote it (issue #48)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from modelseek.retrieval.submission import methods_md


def test_methods_md_embeds_no_local_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    home = "/home/someone/work/modelretrieval-1-subtask-a"
    layout = SimpleNamespace(data=Path(home) / "data")
    md = methods_md([], {}, layout, f"modelseek submission {home} --out /home/someone/runs --team me "
                                    f"--budget=4m --pool=/home/someone/pool.yaml")
    assert "/home/someone" not in md
    assert "`modelretrieval-1-subtask-a/data`" in md
    assert "modelseek submission work/modelretrieval-1-subtask-a --out someone/runs --team me" in md
    inside = tmp_path / "repo" / "data"
    md = methods_md([], {}, SimpleNamespace(data=inside), f"modelseek submission {tmp_path / 'repo'} --out runs")
    assert str(tmp_path) not in md and "`repo/data`" in md and "modelseek submission repo --out runs" in md
