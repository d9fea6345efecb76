"""The operator's review page of the web app (``modelseek duel serve --operator IDENTITY``), at ``/review``.

Only the identities the operator names see it: the signed-in user named by the trusted proxy's identity header
(``--identity-header``, honoured only through ``--trusted-proxy``) must be one of ``--operator``. For anyone else
``/review`` goes on to the Gradio app, which has no such path: its own 404 Not Found, as for any absent path, and the
Gradio app registers no review function at all, so no uploader can list or decide anything.

The page is server-rendered HTML without scripts (a Content-Security-Policy forbids them; every stored field is
HTML-escaped), with one form per decision: *approve* or *reject with a reason* a queued submission, *withdraw with a
reason* a published entry, each naming the submission by its id. A decision calls the same library functions as
``modelseek duel review approve / reject / withdraw`` (:meth:`~.review.ReviewWorkflow.approve`, ``reject``,
``withdraw``), with the signed-in operator as the reviewer; a board whose chain is altered is refused first, as the
CLI does. Forms carry a token bound to the browser's session cookie and the operator (HMAC with the server's
secret), so another site cannot post a decision through the operator's browser.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import time
from collections import OrderedDict
from urllib.parse import parse_qs

from ..core.errors import ModelseekError
from .session import COOKIE, valid_session
from .text import safe_str

PATH = "/review"
#: the largest form body accepted (a reason is at most 5,000 characters)
MAX_FORM = 64 * 1024
_CSP = ("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'")
_STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1400px}
table{border-collapse:collapse;width:100%;margin-bottom:1.5em}th,td{border:1px solid #ccc;padding:.35em;
vertical-align:top;text-align:left}td.flags{color:#8a1c00}.status{padding:.6em;border:1px solid #999;
background:#f4f4f4;margin-bottom:1em}textarea{width:16em;height:3em}form{margin:.2em 0}"""


def esc(value: object) -> str:
    """Any stored value as HTML text (also inside a quoted attribute): never markup."""
    return html.escape(safe_str(value), quote=True)


def _identity(scope: dict, header: bytes | None) -> str | None:
    if header is None:
        return None
    for k, v in scope.get("headers", []):
        if k == header:
            return v.decode("latin-1").strip()[:300] or None
    return None


def _session(scope: dict) -> str | None:
    raw = b"; ".join(v for k, v in scope.get("headers", []) if k == b"cookie").decode("latin-1")
    mine = [p.strip().split("=", 1)[1] for p in raw.split(";") if p.strip().startswith(f"{COOKIE}=")]
    return mine[-1] if mine else None


class ReviewPage:
    """ASGI middleware (inside :class:`~.middleware.SessionCookie`, which has already removed identity headers that did
    not come through a trusted proxy and given the request its signed session cookie) serving ``/review`` to the
    operators; every other request, anyone else's ``/review`` included, goes on to the app."""

    def __init__(self, app, store, secret: bytes, identity_header: str | None, operators: tuple[str, ...]) -> None:
        self.app, self.store, self.secret = app, store, secret
        self.header = identity_header.lower().encode("latin-1") if identity_header else None
        self.operators = frozenset(o.strip() for o in operators if o.strip())
        self._flash: OrderedDict[str, str] = OrderedDict()

    def operator(self, scope: dict) -> str | None:
        """The operator making this request, else ``None``."""
        who = _identity(scope, self.header)
        return who if who is not None and who in self.operators else None

    def csrf(self, session: str, operator: str) -> str:
        msg = f"review|{session}|{operator}".encode("utf-8", "backslashreplace")
        return hmac.new(self.secret, msg, hashlib.sha256).hexdigest()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("path", "") != PATH:
            return await self.app(scope, receive, send)
        operator = self.operator(scope)
        session = _session(scope)
        if operator is None or session is None or not valid_session(self.secret, session):
            # not an operator: the request goes on to the app, which has no such path (its own 404, byte for byte)
            return await self.app(scope, receive, send)
        method = scope.get("method")
        if method == "GET":
            message = self._flash.pop(session, None)
            page = await asyncio.get_running_loop().run_in_executor(None, self.render, operator, session, message)
            return await _respond(send, 200, page.encode("utf-8"), "text/html; charset=utf-8")
        if method != "POST":
            return await _respond(send, 405, b"method not allowed", "text/plain")
        body, ok = b"", True
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return None
            body += msg.get("body", b"")
            if len(body) > MAX_FORM:
                ok = False
                break
            if not msg.get("more_body", False):
                break
        if not ok:
            return await _respond(send, 413, b"form too large", "text/plain")
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        given = form.get("csrf", "").encode("utf-8", "backslashreplace")
        if not hmac.compare_digest(given, self.csrf(session, operator).encode("ascii")):
            return await _respond(send, 403, b"the form is stale or not from this page: reload /review",
                                  "text/plain")
        result = await asyncio.get_running_loop().run_in_executor(None, self.decide, operator, form)
        self._flash[session] = result
        while len(self._flash) > 1000:
            self._flash.popitem(last=False)
        return await _respond(send, 303, b"", "text/plain", [(b"location", b"review")])

    # ---------------------------------------------------------------------------------------- decisions
    def decide(self, operator: str, form: dict) -> str:
        """Carry out one form's decision with the library's own functions; the status line to show."""
        action, ref, why = form.get("action", ""), form.get("id", "").strip(), form.get("why", "")
        try:
            if action not in ("approve", "reject", "withdraw"):
                raise ModelseekError(f"unknown action {action!r}")
            if not ref.isdigit():
                raise ModelseekError(f"a submission id is a number, got {ref!r}")
            problems = self.store.verify()
            if problems:
                raise ModelseekError(f"the leaderboard was altered: {problems[0]}; not using it (modelseek duel db "
                                     "verify lists the problems)")
            sid = int(ref)
            if action == "approve":
                return f"Approved and published {self.store.approve(sid, operator, why)!r} (id {sid})."
            if action == "reject":
                return f"Rejected {self.store.reject(sid, operator, why)!r} (id {sid}); the uploader reads why."
            return (f"Withdrew {self.store.withdraw(sid, operator, why)!r} (id {sid}): kept for audit, the board is "
                    "recomputed without it.")
        except ModelseekError as exc:
            return f"Error: {exc}"
        except Exception as exc:  # noqa: BLE001 - the operator sees one line, never a traceback
            return f"Error: not done: the database could not do it ({type(exc).__name__})"

    # ---------------------------------------------------------------------------------------- the page
    def render(self, operator: str, session: str, message: str | None = None) -> str:
        token = self.csrf(session, operator)

        def form(action: str, sid: int, label: str, reason: str, required: bool = True) -> str:
            why = (f"<textarea name='why' placeholder='{esc(reason)}' maxlength='5000'"
                   f"{' required' if required else ''}></textarea>")
            return (f"<form method='post' action='review' class='{action}' data-id='{sid}'>"
                    f"<input type='hidden' name='csrf' value='{token}'><input type='hidden' name='action' "
                    f"value='{action}'><input type='hidden' name='id' value='{sid}'>{why}"
                    f"<button type='submit' name='do' value='{action}'>{esc(label)}</button></form>")

        parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>Review queue</title><style>{_STYLE}"
                 f"</style></head><body><h1>Review queue</h1><p>Signed in as <b>{esc(operator)}</b> (an operator). "
                 "<a href='./'>Back to the leaderboard</a></p>"]
        if message:
            parts.append(f"<div class='status' id='status'>{esc(message)}</div>")
        try:
            problems = self.store.verify()
            queue = self.store.review_queue() if self.store.review else []
            published = self.store.published()
            withdrawn = self.store.withdrawn()
            ranks = {}
            board = self.store.leaderboard("overall")
            if len(board):
                ranks = dict(zip(board["model"], board["rank"]))
        except Exception as exc:  # noqa: BLE001 - the page still renders, saying why
            parts.append(f"<div class='status'>Error: the board cannot be read ({esc(type(exc).__name__)}: "
                         f"{esc(exc)})</div></body></html>")
            return "".join(parts)
        if problems:
            parts.append(f"<div class='status'>The leaderboard was altered: {esc(problems[0])}; no decision is "
                         "carried out on it (modelseek duel db verify lists the problems).</div>")
        if not self.store.review:
            parts.append("<p>This board publishes without review (it was not created with <code>--review</code>): "
                         "there is no queue; published entries can be withdrawn below.</p>")
        else:
            parts.append(f"<h2>Awaiting review ({len(queue)})</h2>")
            if not queue:
                parts.append("<p id='empty-queue'>No submission awaits review.</p>")
            else:
                parts.append("<table id='queue'><tr><th>id</th><th>model</th><th>team</th><th>uploader</th>"
                             "<th>uploaded / confirmed</th><th>metrics</th><th>flags</th><th>decision</th></tr>")
                for q in queue:
                    metrics = "<br>".join(f"{esc(t)}: {esc(format(v, '.4g'))}" for t, v in q["metrics"].items())
                    flags = "<br>".join(esc(f) for f in q["flags"]) or "none"
                    parts.append(
                        f"<tr data-id='{int(q['id'])}'><td>{int(q['id'])}</td><td class='model'>{esc(q['model'])}</td>"
                        f"<td>{esc(q['team'] or '-')}</td><td>{esc(q['identity'] or '-')}</td>"
                        f"<td>{esc(q['uploaded'])}<br>{esc(q['confirmed'])}</td><td>{metrics}</td>"
                        f"<td class='flags'>{flags}</td><td>"
                        + form("approve", int(q["id"]), "Approve and publish", "note (optional)", False)
                        + form("reject", int(q["id"]), "Reject", "why (the uploader reads it)") + "</td></tr>")
                parts.append("</table>")
        parts.append(f"<h2>Published ({len(published)})</h2>")
        if published:
            parts.append("<table id='published'><tr><th>id</th><th>model</th><th>rank</th><th>withdraw</th></tr>")
            for sid, model in published:
                parts.append(f"<tr data-id='{int(sid)}'><td>{int(sid)}</td><td class='model'>{esc(model)}</td>"
                             f"<td>{esc(ranks.get(model, '-'))}</td><td>"
                             + form("withdraw", int(sid), "Withdraw", "why (public)") + "</td></tr>")
            parts.append("</table>")
        if withdrawn:
            parts.append("<h2>Withdrawn (kept for audit)</h2><table id='withdrawn'><tr><th>id</th><th>model</th>"
                         "<th>by</th><th>when</th><th>why</th></tr>")
            for w in withdrawn:
                parts.append(f"<tr><td>{int(w['id'])}</td><td>{esc(w['model'])}</td><td>{esc(w['by'])}</td>"
                             f"<td>{esc(w['at'])}</td><td>{esc(w['why'])}</td></tr>")
            parts.append("</table>")
        parts.append(f"<p><small>Rendered {esc(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}.</small></p>"
                     "</body></html>")
        return "".join(parts)


async def _respond(send, status: int, body: bytes, ctype: str, extra: list | None = None) -> None:
    headers = [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
               (b"content-security-policy", _CSP.encode()), (b"x-frame-options", b"DENY"),
               (b"referrer-policy", b"same-origin"), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
