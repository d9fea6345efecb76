"""The leaderboard web app (Gradio, the convention of leaderboards in this field).

Tabs: *Leaderboard* (overall, category and task win scores with raw metric values; sortable columns;
filter by category), *Duels* (whom a model beat on each task, with p-values), *Submit* (upload a compiled
submission, pre-submit, look at the preview, confirm). ``modelseek duel serve --db leaderboard.db``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelseekError
from .storage import Store


def build_app(store: Store, title: str = "Duel leaderboard"):
    """A ``gradio.Blocks`` app over ``store`` (launch it with ``.launch()``)."""
    import gradio as gr

    levels = ["overall", "tasks", *store.config.categories]

    def board(level):
        return store.leaderboard(level or "overall")

    def models_update():
        return gr.update(choices=[m for _, m in store.published()])

    def duels(model):
        if not model:
            return None
        return store.duel_details(model)

    def presubmit(path):
        if not path:
            return ("**Error:** choose a submission file first.", gr.update(value=None, visible=False), None,
                    gr.update(interactive=False))
        p = Path(path if isinstance(path, str) else path.name)
        try:
            if p.stat().st_size > store.max_bytes:
                raise ModelseekError(f"submission too large: {p.stat().st_size:,} bytes > limit {store.max_bytes:,}")
            pv = store.presubmit(p.read_bytes(), source=p.name)
        except ModelseekError as exc:
            return (f"**Error:** {exc}", gr.update(value=None, visible=False), None, gr.update(interactive=False))
        msg = (f"**Preview** for `{pv.model}`: rank {pv.rank} of {len(pv.table)}, overall win score "
               f"{pv.scores['overall']:.2f} (computed in {pv.seconds:.1f} s). Nothing is published until you confirm.")
        return msg, gr.update(value=pv.table, visible=True), pv.token, gr.update(interactive=True)

    def confirm(token, level):
        if not token:
            return "**Error:** pre-submit first.", board(level), None, gr.update(interactive=False), models_update()
        try:
            model = store.confirm(token)
        except ModelseekError as exc:
            return f"**Error:** {exc}", board(level), None, gr.update(interactive=False), models_update()
        return (f"**Published** `{model}`.", board(level), None, gr.update(interactive=False), models_update())

    with gr.Blocks(title=title, analytics_enabled=False) as demo:
        gr.Markdown(f"# {title}\nEvery pair of models duels on every task (one-tailed significance test, "
                    f"alpha = {store.alpha}); a task win score is the share of duels won x 100, a category "
                    "averages its tasks, overall averages categories. Click a column header to sort.")
        with gr.Tab("Leaderboard"):
            level = gr.Dropdown(levels, value="overall", label="Show (filter by category)", elem_id="level")
            table = gr.Dataframe(value=board("overall"), interactive=False, elem_id="leaderboard", wrap=True)
            level.change(board, level, table)
        with gr.Tab("Duels"):
            model = gr.Dropdown([m for _, m in store.published()], label="Model", elem_id="duel-model")
            details = gr.Dataframe(interactive=False, elem_id="duels")
            model.change(duels, model, details)
        with gr.Tab("Submit"):
            gr.Markdown("Upload a compiled submission (`modelseek duel compile` output), pre-submit to see the "
                        "leaderboard as it would be, then confirm to publish. Published submissions are immutable.")
            upload = gr.File(label="Submission JSON", file_types=[".json"], type="filepath", elem_id="upload")
            pre_btn = gr.Button("Pre-submit", variant="secondary", elem_id="presubmit")
            status = gr.Markdown(elem_id="status")
            preview = gr.Dataframe(visible=False, interactive=False, elem_id="preview", label="Preview")
            token = gr.State(None)
            confirm_btn = gr.Button("Confirm and publish", variant="primary", interactive=False, elem_id="confirm")
            pre_btn.click(presubmit, upload, [status, preview, token, confirm_btn])
            confirm_btn.click(confirm, [token, level], [status, table, token, confirm_btn, model])
        demo.load(board, level, table)
        demo.load(models_update, None, model)
    return demo
