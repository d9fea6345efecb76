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

# Options are written with two hyphens and must stay copyable: no "smart" en dashes (``--install-default`` would
# render as ``–install-default``, an argparse error when pasted) and no curly quotes in help texts.
smartquotes = False

html_theme = "furo"
html_title = "modelseek"
html_static_path: list[str] = []

# Help texts of the parsers quote names in backticks; sphinx-argparse reads them as reStructuredText, where that
# is the default role: make it a literal (the default, a cross-reference, needs an environment it does not pass).
default_role = "literal"


def _no_false_mailto(app, doctree) -> None:
    """docutils reads ``name@text`` as an e-mail address: "nDCG@1/3/5" in a help text became a mailto link. A
    "domain" without a dot is no address: such links become their plain text again."""
    from docutils import nodes

    for ref in list(doctree.findall(nodes.reference)):
        uri = str(ref.get("refuri", ""))
        if uri.startswith("mailto:") and "." not in uri.partition("@")[2]:
            ref.replace_self(nodes.Text(ref.astext()))


def setup(app):
    app.connect("doctree-read", _no_false_mailto)
    return {"parallel_read_safe": True}
