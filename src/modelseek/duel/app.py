"""The leaderboard web app (Gradio, the convention of leaderboards in this field).

Tabs: *Leaderboard* (overall, category and task win scores with the metric values computed from the
predictions; sortable columns; filter by category), *Duels* (whom a model beat on each task, with p-values,
and the model's details with its lm-evaluation-harness provenance), *Submit* (upload a compiled submission,
pre-submit, look at the preview, confirm). ``modelseek duel serve --db leaderboard.db``.

Facing the internet: the app reads only files uploaded through it (a file object naming any other path on
the server is refused without being opened), uploads over the store's size limit are refused by the server
while they are received (Gradio's ``max_file_size``) and again before reading, every upload is deleted once
handled (a file is shared by two uploads of identical bytes, so it is deleted once older than
``upload_ttl``, as are partial uploads), and user strings are escaped wherever Markdown renders them.

Ownership: the server gives each browser an unguessable, HttpOnly session cookie (:class:`SessionCookie`);
a pre-submission is bound to it (and, behind a signing-in proxy, to the user named by ``identity_header``),
so its token confirms nothing from another browser, whatever Gradio session hash that browser claims.
Every stored value reaches the page through :func:`cell` / :func:`safe_tree` (strings that can always be
encoded, numbers in one format), so no stored row can stop a page from rendering; rows that could not be
shown as stored are listed to the operator at start (``modelseek_notes``).
"""

from __future__ import annotations

import os

import pandas as pd

from ..core.errors import ModelseekError
from .handlers import EMPTY, LeaderboardApp  # noqa: F401 (re-exported)
from .leaderboard import display_frame
from .middleware import UPLOAD_DEADLINE, UPLOAD_STALL, SessionCookie, _forwarded_client  # noqa: F401 (re-exported)
from .page import (cell, datatypes, linked_frame, md_code, md_text, params_text, provenance_table,  # noqa: F401
                   pvalue_text, safe_frame, safe_tree)
from .review_page import ReviewPage
from .session import COOKIE, sign_session, valid_session  # noqa: F401 (re-exported)
from .storage import Store
from .uploads import UPLOAD_TTL, upload_root  # noqa: F401 (re-exported)

#: pre-submissions the page runs at once (Gradio's default is one at a time: one uploader's large refused uploads
#: made every other wait); a taken name is refused before the full parse, so refused uploads are cheap anyway
PRESUBMIT_CONCURRENCY = 4


_HEAD = """<script>
(function () {
  function titles() {
    document.querySelectorAll('[data-modelseek-titles]').forEach(function (holder) {
      var map = JSON.parse(holder.getAttribute('data-modelseek-titles'));
      var root = document.getElementById(holder.getAttribute('data-for'));
      if (!root) return;
      root.querySelectorAll('th, [role=columnheader]').forEach(function (th) {
        var text = (th.innerText || '').trim();
        if (map[text]) th.setAttribute('title', map[text]);
      });
    });
  }
  new MutationObserver(titles).observe(document.documentElement, {subtree: true, childList: true});
})();
</script>"""
_CSS = """#leaderboard th, #preview th, #duels th { word-break: keep-all; overflow-wrap: normal; hyphens: none; }
#leaderboard th *, #preview th *, #duels th * { word-break: keep-all !important; overflow-wrap: normal !important; }"""


def _titles_html(frame, target: str) -> str:
    import html
    import json

    titles = getattr(frame, "modelseek_titles", {}) or {}
    return (f"<div data-modelseek-titles='{html.escape(json.dumps(titles), quote=True)}' data-for='{target}' "
            "style='display:none'></div>")


def _submit_handlers(app: LeaderboardApp, store: Store, shown, duels_tab):
    """The Submit tab's handlers: pre-submit (the preview; the staged file stays visible), confirm
    (publication; the Leaderboard and Duels tabs are refreshed) and discard."""
    import gradio as gr  # lazy: gradio

    def presubmit(file, request: gr.Request):
        msg, table, token = app.presubmit(file, request)
        frame = None
        if isinstance(table, pd.DataFrame):   # the new row highlighted
            new = table.attrs.get("new_model")
            linked = linked_frame(table)
            mark = [str(v) for v, m in zip(linked["model"], table["model"]) if m == new]
            frame = display_frame(safe_frame(linked), store.config, highlight=mark[0] if mark else None)
        staged = token is not None
        return (msg, gr.update(value=frame, visible=table is not None, label="Preview (not published; new row "
                                                                                 "highlighted)",
                               datatype=datatypes(frame) or None), token,
                gr.update(interactive=staged), gr.update(interactive=staged), gr.update())

    def confirm(token, level, query, current, request: gr.Request):
        msg, table, published = app.confirm(token, request)
        frame, titles, csv_path, json_path = shown(level, query)
        tabs = duels_tab(current)
        if table is not None:          # the board changed: the recomputed preview, confirm again
            preview = gr.update(value=display_frame(safe_frame(table), store.config), visible=True,
                                label="Preview (recomputed, not published)")
            return (msg, preview, frame, titles, app.empty_note(), token, gr.update(interactive=True),
                    gr.update(interactive=True), *tabs, gr.update(), csv_path, json_path)
        done = published or token is None
        return (msg, gr.update(value=None, visible=False), frame, titles, app.empty_note(),
                None if published else token, gr.update(interactive=not done), gr.update(interactive=not done),
                *tabs, gr.update(value=None) if published else gr.update(), csv_path, json_path)

    def discard(token, request: gr.Request):
        msg = app.discard(token, request)
        return (msg, gr.update(value=None, visible=False), None, gr.update(interactive=False),
                gr.update(interactive=False), gr.update(value=None))

    # the module's annotations are strings (__future__): Gradio finds its Request parameter by the class
    for fn in (presubmit, confirm, discard):
        fn.__annotations__["request"] = gr.Request
    return presubmit, confirm, discard


def _layout(gr, app: LeaderboardApp, store: Store, levels: list[str], shown, duels_update) -> dict:
    """The three tabs' components, by name."""
    c: dict = {}
    with gr.Tab("Leaderboard"):
        with gr.Row():
            c["level"] = gr.Dropdown(levels, value="overall", label="Show (filter by category)", elem_id="level")
            c["search"] = gr.Textbox(label="Search models", placeholder="part of a model name", elem_id="search")
        c["empty"] = gr.Markdown(app.empty_note(), elem_id="empty")
        first = app.shown_board("overall")
        c["table"] = gr.Dataframe(value=first, interactive=False, elem_id="leaderboard", wrap=False,
                                  datatype=datatypes(first) or "str")
        c["titles"] = gr.HTML(_titles_html(first, "leaderboard"), elem_id="leaderboard-titles")
        csv_path, json_path = app.exports("overall")
        with gr.Row():
            c["csv"] = gr.DownloadButton("Download CSV", value=csv_path, elem_id="download-csv", size="sm")
            c["json"] = gr.DownloadButton("Download JSON", value=json_path, elem_id="download-json", size="sm")
    with gr.Tab("Duels"):
        names = app.models()
        c["model"] = gr.Dropdown(names, value=names[0] if names else None, label="Model", elem_id="duel-model")
        c["duels_empty"] = gr.Markdown(app.empty_note(), elem_id="duels-empty")
        d0, m0 = app.duels(names[0]) if names else (None, None)
        c["details"] = gr.Dataframe(value=d0, interactive=False, elem_id="duels")
        c["meta"] = gr.Dataframe(value=provenance_table(m0), interactive=False, wrap=True,
                                 label="Model details and provenance", elem_id="model-details")
    with gr.Tab("Submit"):
        gr.Markdown("Upload a compiled submission (`modelseek duel compile` output or BenCzechMark's compiled "
                    f"file, at most {store.max_bytes / 2**20:.0f} MB), pre-submit to see the leaderboard as it "
                    "would be, then confirm to publish (within "
                    f"{store.pending_ttl / 3600:g} h). Published submissions are immutable."
                    + (" On this board the operator reviews each confirmed submission before it is published."
                       if store.review else ""))
        c["upload"] = gr.File(label="Submission JSON", file_types=[".json"], type="filepath", elem_id="upload")
        c["pre_btn"] = gr.Button("Pre-submit", variant="secondary", elem_id="presubmit")
        c["status"] = gr.Markdown(elem_id="status")
        c["preview"] = gr.Dataframe(visible=False, interactive=False, elem_id="preview",
                                    label="Preview (not published)")
        c["token"] = gr.State(None)
        with gr.Row():
            c["confirm_btn"] = gr.Button("Confirm and publish", variant="primary", interactive=False,
                                         elem_id="confirm")
            c["discard_btn"] = gr.Button("Discard", variant="secondary", interactive=False, elem_id="discard")
    return c


def build_app(store: Store, title: str = "Duel leaderboard", identity_header: str | None = None,
              operators: tuple[str, ...] = ()):
    """A ``gradio.Blocks`` app over ``store`` (launch it with :func:`launch`). ``identity_header``: the
    proxy's header naming the signed-in user (uploads without it are refused). ``operators``: the signed-in
    users who see the review page at ``/review`` (:mod:`.review_page`; it is served by :func:`launch`, outside
    Gradio, so the app registers no review function anyone could call)."""
    import gradio as gr  # lazy: gradio

    app = LeaderboardApp(store, identity_header=identity_header, operators=operators)
    store.purge_expired()
    levels = ["overall", "tasks", *store.config.categories]

    def shown(level, query=None):
        frame = app.shown_board(level, query)
        csv_path, json_path = app.exports(level, query)
        return (gr.update(value=frame, datatype=datatypes(frame) or "str"), _titles_html(frame, "leaderboard"),
                csv_path, json_path)

    def duels_update(model):
        details, meta = app.duels(model)
        return details, provenance_table(meta), ("" if model else app.empty_note())

    def duels_tab(current=None):
        """The Duels tab as it is now: the model list, the chosen model's duels and details, the note."""
        names = app.models()
        value = current if current in names else (names[0] if names else None)
        return (gr.update(choices=names, value=value), *duels_update(value))

    def first_open(level, query):
        return (*shown(level, query), app.empty_note(), *duels_tab())

    presubmit, confirm, discard = _submit_handlers(app, store, shown, duels_tab)
    notes = app.problems()
    with gr.Blocks(title=title, analytics_enabled=False, delete_cache=(3600, 3600)) as demo:
        gr.Markdown(f"# {md_text(title)}\nEvery pair of models duels on every task (one-tailed significance test, "
                    f"alpha = {store.alpha}); a task win score is the share of duels won x 100, a category "
                    "averages its tasks, overall averages categories. Metric values are computed from each "
                    "submission's predictions. Rows are ranked by overall win score (in a category's view, by that "
                    "category's score); equal scores share a rank. To sort by another column, open the ⋮ menu of its "
                    "header (Sort ascending / descending); hover a header for its full name. A model's name links "
                    "to its page. "
                    "Families count once: an entry published although it copies another joins its family; duels "
                    "against a family are those against its original, and a copy scores at most its original and "
                    "takes no rank.")
        operator = gr.Markdown("", elem_id="operator-link")
        c = _layout(gr, app, store, levels, shown, duels_update)
        board = [c["table"], c["titles"]]
        downloads = [c["csv"], c["json"]]
        duels = [c["model"], c["details"], c["meta"], c["duels_empty"]]
        c["level"].change(shown, [c["level"], c["search"]], [*board, *downloads])
        c["search"].change(shown, [c["level"], c["search"]], [*board, *downloads])
        c["model"].change(duels_update, c["model"], duels[1:])
        buttons = [c["confirm_btn"], c["discard_btn"]]
        c["pre_btn"].click(presubmit, c["upload"], [c["status"], c["preview"], c["token"], *buttons, c["upload"]],
                           concurrency_limit=PRESUBMIT_CONCURRENCY)
        c["confirm_btn"].click(confirm, [c["token"], c["level"], c["search"], c["model"]],
                               [c["status"], c["preview"], *board, c["empty"], c["token"], *buttons, *duels,
                                c["upload"], *downloads])
        c["discard_btn"].click(discard, c["token"], [c["status"], c["preview"], c["token"], *buttons, c["upload"]])
        # a page opened later shows the board as it is then (also on the Duels tab)
        demo.load(first_open, [c["level"], c["search"]], [*board, *downloads, c["empty"], *duels])
        if app.operators:
            def operator_link(request: gr.Request):
                return app.operator_link(request)

            operator_link.__annotations__["request"] = gr.Request
            demo.load(operator_link, None, operator)
    demo.modelseek_store = store
    demo.modelseek_notes = notes
    demo.modelseek_app = app
    return demo


def launch(demo, host: str = "127.0.0.1", port: int = 7860, trusted_proxies: tuple[str, ...] = (), **kwargs):
    """Serve ``demo`` (from :func:`build_app`): uploads over the store's limit are refused while they are
    received (Gradio's ``max_file_size`` stops reading the request), every body has a stall limit
    (``upload_stall``) and a deadline (``upload_deadline``) and its bytes are charged to the uploader's daily quota
    as they arrive (:class:`~.middleware.SessionCookie`), no server folder is added to what
    Gradio may serve, every browser gets its signed session cookie and forwarded headers count only from
    ``trusted_proxies`` (:class:`SessionCookie`), the operators named in :func:`build_app` (only through a trusted
    proxy) get the review page at ``/review`` (:class:`~.review_page.ReviewPage`, 404 for anyone else), and the
    address is printed by modelseek (Gradio's own start-up text advertises a ``share=True`` this command has not).

    Uvicorn (under Gradio) trusts ``X-Forwarded-For`` from 127.0.0.1 by default (``FORWARDED_ALLOW_IPS``);
    while the server starts that variable is set to trust no one, so :class:`SessionCookie` alone decides."""
    from starlette.middleware import Middleware  # lazy: starlette

    quiet = kwargs.pop("quiet", False)
    block = not kwargs.pop("prevent_thread_lock", False)
    stall = kwargs.pop("upload_stall", UPLOAD_STALL)
    deadline = kwargs.pop("upload_deadline", UPLOAD_DEADLINE)
    app = demo.modelseek_app
    store = demo.modelseek_store
    if app.operators and not trusted_proxies:
        raise ModelseekError("the review page needs the signing-in proxy's address (--trusted-proxy ADDRESS): "
                             "without it any client could name itself an operator in the identity header")
    cookie = Middleware(SessionCookie, secret=app.secret, trusted=tuple(trusted_proxies),
                        identity_header=app.identity_header, stall=stall,
                        on_stall=lambda: app.sweep_stalled(stall), deadline=deadline,
                        on_bytes=store.charge_received, over_quota=app.over_quota)
    app.metered = True
    middleware = [cookie]
    if app.operators:
        middleware.append(Middleware(ReviewPage, store=demo.modelseek_store, secret=app.secret,
                                     identity_header=app.identity_header, operators=app.operators))
    app_kwargs = {**kwargs.pop("app_kwargs", {}), "middleware": middleware}
    before = os.environ.get("FORWARDED_ALLOW_IPS")
    os.environ["FORWARDED_ALLOW_IPS"] = ""          # read by uvicorn.Config inside demo.launch
    try:
        out = demo.launch(server_name=host, server_port=port, max_file_size=demo.modelseek_store.max_bytes,
                          allowed_paths=[], quiet=True, app_kwargs=app_kwargs, head=_HEAD, css=_CSS,
                          prevent_thread_lock=True, **kwargs)
    finally:
        if before is None:
            os.environ.pop("FORWARDED_ALLOW_IPS", None)
        else:
            os.environ["FORWARDED_ALLOW_IPS"] = before
    if not quiet:
        print(f"serving the leaderboard on http://{host}:{demo.server_port}/ (Ctrl+C stops it)", flush=True)
    if block:
        demo.block_thread()
    return out
