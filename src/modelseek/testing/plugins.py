"""An outside distribution for a test: modules and their entry points, installed into a folder as pip leaves an
installed distribution (the modules beside a ``NAME-VERSION.dist-info`` with ``METADATA`` and
``entry_points.txt``), so that a ``modelseek`` run with that folder on its path finds the plugins exactly as it
finds an installed package's. For this suite's plugin tests and a plugin author's own::

    site = install_distribution(tmp_path / "site", "my-plugins", {"my_plugins": SOURCE},
                                {"modelseek.fusion": {"my_max": "my_plugins:MY_MAX"}})
    run_cli_subprocess("fuse", ..., env=plugin_env(site))
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import modelseek


def install_distribution(site: str | Path, name: str, modules: Mapping[str, str],
                         entry_points: str | Mapping[str, Mapping[str, str]], version: str = "0.1") -> Path:
    """Write ``modules`` ({module name: source}) and the distribution ``name``'s metadata with ``entry_points``
    (the ``entry_points.txt`` text, or {group: {entry point: "module:attribute"}}) into ``site``; returns ``site``."""
    site = Path(site)
    site.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (site / f"{module}.py").write_text(source, encoding="utf-8")
    if not isinstance(entry_points, str):
        entry_points = "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
                               for group, eps in entry_points.items())
    info = site / f"{re.sub(r'[-.]+', '_', name)}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return site


def plugin_env(site: str | Path) -> dict[str, str]:
    """The environment variables of a subprocess that sees this package's sources and the distributions in
    ``site`` (for :func:`modelseek.testing.cli.run_cli_subprocess`'s ``env``)."""
    src = str(Path(modelseek.__file__).resolve().parents[1])
    return {"PYTHONPATH": os.pathsep.join([src, str(site)])}


__all__ = ["install_distribution", "plugin_env"]
