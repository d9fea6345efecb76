"""Sphinx configuration of the modelseek documentation (``make docs``; built with warnings as errors in CI).

Sphinx rather than MkDocs: MkDocs 1.6 has had no release since 2024, and the CLI reference must be generated
from the argparse parsers, which sphinx-argparse does (MkDocs has no maintained argparse plugin). Pages are
Markdown, read by MyST; the API reference is autodoc over ``modelseek.__all__``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # document this checkout's code, not an installed copy
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the build never touches the network

project = "modelseek"
author = "the modelseek developers"
copyright = "the modelseek developers"  # noqa: A001 (Sphinx's configuration name)

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinxarg.ext",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4  # `[text](page.md#a-heading)` links are checked like page links

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}

html_theme = "furo"
html_title = "modelseek"
html_static_path: list[str] = []

# Help texts of the parsers quote names in backticks; sphinx-argparse reads them as reStructuredText, where that
# is the default role: make it a literal (the default, a cross-reference, needs an environment it does not pass).
default_role = "literal"
