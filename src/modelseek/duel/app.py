"""The leaderboard web app (Gradio, the convention of leaderboards in this field).

Tabs: *Leaderboard* (overall, category and task win scores with the metric values computed from the
predictions; sortable columns; filter by category), *Duels* (whom a model beat on each task, with p-values,
and the model's details with its lm-evaluation-harness provenance), *Submit* (upload a compiled submission,
pre-submit, look at the preview, confirm). ``modelseek duel serve --db leaderboard.db``.

Facing the internet: the app reads only files uploaded through it (a file object naming any other path on
the server is refused without being opened), uploads over the store's size limit are refused by the server
while they are received (Gradio's ``max_file_size``) and again before reading, every upload is deleted once
handled, and user strings are escaped wherever Markdown renders them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from ..errors import ModelseekError
from .storage import Store

EMPTY = "No model is published yet. Upload the first one in the **Submit** tab."
_PUNCT = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~&\"'$%=:;,/?@^])")


def md_text(text: str) -> str:
    """``text`` as literal Markdown text: every ASCII punctuation character backslash-escaped (CommonMark
    allows it for all of them), so no user string can open a code span, a link, emphasis or HTML."""
    return _PUNCT.sub(r"\\\1", str(text)).replace("\n", " ")


def md_code(text: str) -> str:
    """``text`` in a Markdown code span that it cannot close: the fence is one backtick longer than the
    longest run of backticks inside (CommonMark code spans), padded when the text starts or ends with one."""
    text = str(text).replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def upload_root() -> Path:
    """The folder where Gradio stores the files uploaded through the app."""
    try:
        from gradio.utils import get_upload_folder

        return Path(get_upload_folder()).resolve()
    except ImportError:  # pragma: no cover - gradio is present whenever the app runs
        return Path(os.environ.get("GRADIO_TEMP_DIR", "/tmp/gradio")).resolve()


class LeaderboardApp:
    """The app's behaviour, apart from its layout (tests call these handlers directly)."""

    def __init__(self, store: Store, uploads: Path | None = None) -> None:
        self.store = store
        self.uploads = (uploads or upload_root()).resolve()

    # ------------------------------------------------------------------------------------ uploads
    def _uploaded_path(self, file) -> Path:
        """The path of an uploaded file, refused (without opening it) unless it lies in the upload folder."""
        name = file if isinstance(file, (str, os.PathLike)) else getattr(file, "path", None) or getattr(file, "name", None)
        if not name:
            raise ModelseekError("choose a submission file first")
        p = Path(name)
        try:
            real = p.resolve(strict=True)
        except (OSError, RuntimeError):
            raise ModelseekError("the file is not an upload of this page") from None
        if self.uploads not in real.parents or p.is_symlink() or not real.is_file():
            raise ModelseekError("only files uploaded through this page are read")
        return real

    def read_upload(self, file) -> tuple[bytes, str]:
        """The bytes of an uploaded file (at most the store's limit; the file is read no further)."""
        p = self._uploaded_path(file)
        limit = self.store.max_bytes
        size = p.stat().st_size
        if size > limit:
            raise ModelseekError(f"submission too large: {size:,} bytes > limit {limit:,}")
        with open(p, "rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise ModelseekError(f"submission too large: more than {limit:,} bytes")
        return data, p.name

    def discard_upload(self, file) -> None:
        """Delete an uploaded file (and its folder when empty) once it has been handled."""
        try:
            p = self._uploaded_path(file)
        except ModelseekError:
            return
        try:
            p.unlink()
            if p.parent != self.uploads and not any(p.parent.iterdir()):
                p.parent.rmdir()
        except OSError:
            pass

    # ------------------------------------------------------------------------------------ handlers
    def board(self, level: str | None = "overall") -> pd.DataFrame:
        return self.store.leaderboard(level or "overall")

    def empty_note(self) -> str:
        return "" if self.store.published() else EMPTY

    def models(self) -> list[str]:
        """Published models, best first (the Duels tab opens on the leader)."""
        board = self.store.leaderboard("overall")
        return [str(m) for m in board["model"]] if len(board) else []

    def duels(self, model: str | None) -> tuple[pd.DataFrame | None, dict | None]:
        if not model:
            return None, None
        return self.store.duel_details(model), self.store.metadata(model)

    def presubmit(self, file) -> tuple[str, object, str | None]:
        """``(status Markdown, preview table or None, token or None)``; the upload is deleted afterwards."""
        try:
            data, name = self.read_upload(file)
            pv = self.store.presubmit(data, source=name)
        except ModelseekError as exc:
            return f"**Error:** {md_text(exc)}", None, None
        finally:
            self.discard_upload(file)
        msg = (f"**Preview** for {md_code(pv.model)}: rank {pv.rank} of {len(pv.table)}, overall win score "
               f"{pv.scores['overall']:.2f} (computed in {pv.seconds:.1f} s). Nothing is published until you confirm.")
        if pv.warnings:
            msg += "\n\nWarnings: " + "; ".join(md_text(w) for w in pv.warnings[:10])
        return msg, pv.table, pv.token

    def confirm(self, token: str | None) -> str:
        if not token:
            return "**Error:** pre-submit first."
        try:
            model = self.store.confirm(token)
        except ModelseekError as exc:
            return f"**Error:** {md_text(exc)}"
        return f"**Published** {md_code(model)}."


def build_app(store: Store, title: str = "Duel leaderboard"):
    """A ``gradio.Blocks`` app over ``store`` (launch it with :func:`launch`)."""
    import gradio as gr

    app = LeaderboardApp(store)
    levels = ["overall", "tasks", *store.config.categories]

    def models_update(current=None):
        names = app.models()
        value = current if current in names else (names[0] if names else None)
        return gr.update(choices=names, value=value)

    def duels_update(model):
        details, meta = app.duels(model)
        return details, meta, ("" if model else app.empty_note())

    def first_open(level):
        names = app.models()
        model = names[0] if names else None
        details, meta = app.duels(model)
        note = app.empty_note()
        return (app.board(level), note, gr.update(choices=names, value=model), details, meta, note)

    def presubmit(file):
        msg, table, token = app.presubmit(file)
        return (msg, gr.update(value=table, visible=table is not None), token,
                gr.update(interactive=token is not None), None)

    def confirm(token, level, current):
        msg = app.confirm(token)
        return (msg, app.board(level), app.empty_note(), None, gr.update(interactive=False), models_update(current))

    # uploads are deleted once handled; delete_cache also clears those never pre-submitted (hourly, > 1 h old)
    with gr.Blocks(title=title, analytics_enabled=False, delete_cache=(3600, 3600)) as demo:
        gr.Markdown(f"# {md_text(title)}\nEvery pair of models duels on every task (one-tailed significance test, "
                    f"alpha = {store.alpha}); a task win score is the share of duels won x 100, a category "
                    "averages its tasks, overall averages categories. Metric values are computed from each "
                    "submission's predictions. Click a column header to sort.")
        with gr.Tab("Leaderboard"):
            level = gr.Dropdown(levels, value="overall", label="Show (filter by category)", elem_id="level")
            empty = gr.Markdown(app.empty_note(), elem_id="empty")
            table = gr.Dataframe(value=app.board("overall"), interactive=False, elem_id="leaderboard", wrap=True)
            level.change(app.board, level, table)
        with gr.Tab("Duels"):
            names = app.models()
            model = gr.Dropdown(names, value=names[0] if names else None, label="Model", elem_id="duel-model")
            duels_empty = gr.Markdown(app.empty_note(), elem_id="duels-empty")
            details = gr.Dataframe(value=app.duels(names[0])[0] if names else None, interactive=False,
                                   elem_id="duels")
            meta = gr.JSON(value=app.duels(names[0])[1] if names else None, label="Model details and provenance",
                           elem_id="model-details")
            model.change(duels_update, model, [details, meta, duels_empty])
        with gr.Tab("Submit"):
            gr.Markdown("Upload a compiled submission (`modelseek duel compile` output or BenCzechMark's compiled "
                        f"file, at most {store.max_bytes / 2**20:.0f} MB), pre-submit to see the leaderboard as it "
                        "would be, then confirm to publish. Published submissions are immutable.")
            upload = gr.File(label="Submission JSON", file_types=[".json"], type="filepath", elem_id="upload")
            pre_btn = gr.Button("Pre-submit", variant="secondary", elem_id="presubmit")
            status = gr.Markdown(elem_id="status")
            preview = gr.Dataframe(visible=False, interactive=False, elem_id="preview", label="Preview")
            token = gr.State(None)
            confirm_btn = gr.Button("Confirm and publish", variant="primary", interactive=False, elem_id="confirm")
            pre_btn.click(presubmit, upload, [status, preview, token, confirm_btn, upload])
            confirm_btn.click(confirm, [token, level, model], [status, table, empty, token, confirm_btn, model])
        # a page opened later shows the board as it is then (also on the Duels tab)
        demo.load(first_open, level, [table, empty, model, details, meta, duels_empty])
    demo.modelseek_store = store
    return demo


def launch(demo, host: str = "127.0.0.1", port: int = 7860, **kwargs):
    """Serve ``demo`` (from :func:`build_app`): uploads over the store's limit are refused while they are
    received (Gradio's ``max_file_size`` stops reading the request), and no server folder is added to what
    Gradio may serve."""
    return demo.launch(server_name=host, server_port=port, max_file_size=demo.modelseek_store.max_bytes,
                       allowed_paths=[], **kwargs)
