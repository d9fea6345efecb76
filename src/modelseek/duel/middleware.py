"""The web app's ASGI middleware: who is asking (the signed session cookie, forwarded headers only from trusted
proxies, the identity header) and what a request body may cost (a stall limit, an overall deadline and a daily
quota charged with every byte received, whichever endpoint receives it).

A dropped upload (stalled, past its deadline, or from an uploader whose quota is spent) is answered with a 4xx and
one log line, never an HTTP 500 with a traceback: a multipart body is ended with a malformed part, so that Gradio's
own error path closes and deletes the partial files it was writing; any other body ends as a client disconnect,
and the exception the handler raises about it is answered here."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
import time
from collections.abc import Callable

from .session import COOKIE, sign_session, valid_session
from .text import safe_str

log = logging.getLogger("modelseek.duel")

#: an upload whose next bytes do not arrive within this many seconds is stalled: the request is dropped and its
#: partial file deleted (``serve --upload-stall-seconds``)
UPLOAD_STALL = 30.0
#: an upload not received whole within this many seconds is dropped, however steadily it trickles
#: (``serve --upload-deadline-seconds``)
UPLOAD_DEADLINE = 600.0
_BOUNDARY = re.compile(rb"boundary=\"?([^\";]+)\"?", re.IGNORECASE)


def _forwarded_client(headers: list, trusted: frozenset[str]) -> str | None:
    """The client named by ``X-Forwarded-For`` behind trusted proxies: the rightmost address that is not a
    trusted proxy (the ones to its left were written by the client itself)."""
    chain = [a.strip() for k, v in headers if k == b"x-forwarded-for" for a in v.decode("latin-1").split(",")]
    for addr in reversed([a for a in chain if a]):
        if addr not in trusted:
            return addr
    return None


class _Body:
    """One request body under the limits: bytes counted, a stall limit per chunk and a deadline for the whole."""

    def __init__(self, scope: dict, receive, stall: float | None, deadline: float | None) -> None:
        self.receive, self.stall, self.deadline = receive, stall, deadline
        self.start = time.monotonic()
        self.bytes = 0
        self.complete = False
        self.dropped: str | None = None           # why the body was dropped ("stalled", "past its deadline")
        ctype = dict(scope.get("headers", [])).get(b"content-type", b"")
        m = _BOUNDARY.search(ctype) if ctype.lower().startswith(b"multipart/") else None
        self.boundary = m.group(1) if m else None

    def _end(self) -> dict:
        """What the handler reads after a drop: a malformed part for a multipart body (the parser's error path
        deletes its partial files), else a disconnect."""
        boundary, self.boundary = self.boundary, None
        if boundary is not None:
            return {"type": "http.request", "body": b"\r\n--" + boundary + b"\r\n\x00\r\n", "more_body": False}
        return {"type": "http.disconnect"}

    async def __call__(self) -> dict:
        if self.dropped:
            return self._end()
        if self.complete:
            return await self.receive()
        limits = [x for x in (self.stall, None if self.deadline is None else
                              self.deadline - (time.monotonic() - self.start)) if x is not None]
        try:
            message = await (asyncio.wait_for(self.receive(), timeout=max(0.0, min(limits))) if limits
                             else self.receive())
        except asyncio.TimeoutError:
            overdue = self.deadline is not None and time.monotonic() - self.start >= self.deadline
            self.dropped = "past its deadline" if overdue else "stalled"
            return self._end()
        self.bytes += len(message.get("body", b""))
        if message.get("type") != "http.request" or not message.get("more_body", False):
            self.complete = True
        return message


class SessionCookie:
    """ASGI middleware: who is asking, as the server knows it, and what a body may cost.

    * **Session**: the server issues the session cookie (HttpOnly, SameSite=Lax, Secure over https), a random
      token signed with the server's secret; any other value (a client-chosen one) is replaced by a new
      session, so a browser cannot choose or fixate one.
    * **Client address**: forwarded headers (``X-Forwarded-For``, ``-Proto``, ``-Host``) are honoured only
      from the addresses in ``trusted`` (``--trusted-proxy``) and removed from every other request; the
      client is the rightmost forwarded address that is not a trusted proxy.
    * **Identity header**: with trusted proxies, honoured only on requests that came through one of them.
    * **Bodies** (POST, PUT, PATCH): dropped when no byte comes for ``stall`` seconds or the whole has not come
      within ``deadline`` seconds; every byte received is passed to ``on_bytes(uploader, n)`` (the daily quota),
      and an upload (or a body over :data:`SMALL_BODY`) from an uploader for whom ``over_quota(uploader)`` is true
      is refused before it is read."""

    def __init__(self, app, secret: bytes, trusted: tuple[str, ...] = (), identity_header: str | None = None,
                 stall: float | None = UPLOAD_STALL, on_stall=None, deadline: float | None = UPLOAD_DEADLINE,
                 on_bytes: Callable[[str, int], None] | None = None,
                 over_quota: Callable[[str], bool] | None = None) -> None:
        self.app, self.secret, self.trusted = app, secret, frozenset(trusted)
        self.identity = identity_header.lower().encode("latin-1") if identity_header else None
        self.stall, self.on_stall, self.deadline = stall, on_stall, deadline
        self.on_bytes, self.over_quota = on_bytes, over_quota

    def _who(self, scope: dict) -> dict:
        headers = list(scope.get("headers", []))
        peer = (scope.get("client") or (None, 0))[0]
        if peer is not None and peer in self.trusted:
            client = _forwarded_client(headers, self.trusted)
            if client is not None:
                scope = {**scope, "client": (client, 0)}
            proto = next((v.decode("latin-1").strip() for k, v in headers if k == b"x-forwarded-proto"), None)
            if proto in ("http", "https") and scope["type"] == "http":
                scope = {**scope, "scheme": proto}
            return scope
        drop = {b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host", b"forwarded", b"x-real-ip"}
        if self.trusted and self.identity is not None:
            drop.add(self.identity)
        return {**scope, "headers": [(k, v) for k, v in headers if k not in drop]}

    def uploader(self, scope: dict) -> str | None:
        """Who is charged for a body, as the app names them (:meth:`.app.LeaderboardApp.who`): the signed-in
        identity, else ``ip:ADDRESS``."""
        if self.identity is not None:
            value = dict(scope.get("headers", [])).get(self.identity)
            name = safe_str(value.decode("latin-1")).strip()[:300] if value else ""
            if name:
                return name
        host = (scope.get("client") or (None, 0))[0]
        return f"ip:{host}" if host else None

    def _cookie(self, scope: dict, send):
        """``(scope, send)`` with the session cookie: kept when valid, else a new one issued."""
        raw = b"; ".join(v for k, v in scope.get("headers", []) if k == b"cookie").decode("latin-1")
        pairs = [p.strip() for p in raw.split(";") if p.strip()]
        mine = [p.split("=", 1)[1] for p in pairs if p.startswith(f"{COOKIE}=")]
        if len(mine) == 1 and valid_session(self.secret, mine[0]):
            return scope, send
        value = sign_session(self.secret, secrets.token_urlsafe(32))
        others = [p for p in pairs if not p.startswith(f"{COOKIE}=")]
        headers = [(k, v) for k, v in scope.get("headers", []) if k != b"cookie"]
        headers.append((b"cookie", "; ".join([*others, f"{COOKIE}={value}"]).encode("latin-1")))
        scope = {**scope, "headers": headers}            # this request already carries it
        secure = scope.get("scheme") in ("https", "wss")
        attrs = "; Path=/; HttpOnly; SameSite=Lax" + ("; Secure" if secure else "")

        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                   (b"set-cookie", f"{COOKIE}={value}{attrs}".encode())]}
            await send(message)

        return scope, send_with_cookie

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        scope = self._who(scope)
        scope, send = self._cookie(scope, send)
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        who = self.uploader(scope)
        if who is not None and self.over_quota is not None and _bulky(scope) \
                and await asyncio.to_thread(self.over_quota, who):
            log.warning("refused a %s body from %s: its daily quota is spent", scope.get("path"), who)
            return await _answer(send, 429, "daily upload limit reached: try again later")
        body = _Body(scope, receive, self.stall, self.deadline)
        charged = {"bytes": 0}

        async def settle() -> None:
            """Charge the bytes received so far and not yet charged (before any answer leaves: the quota is
            current when the client hears back)."""
            n = body.bytes - charged["bytes"]
            if who is not None and self.on_bytes is not None and n > 0:
                charged["bytes"] = body.bytes
                with contextlib.suppress(Exception):        # the quota's bookkeeping never fails a request
                    await asyncio.to_thread(self.on_bytes, who, n)

        try:
            await self._serve(scope, body, send, settle)
        finally:
            await settle()

    async def _serve(self, scope: dict, body: _Body, send, settle) -> None:
        """Run the app on ``body``; a dropped body is answered 408 here (with one log line), whatever the
        handler made of it."""
        started = {"ours": False, "theirs": False}

        async def guarded(message):
            if message["type"] == "http.response.start":
                await settle()
            if body.dropped:
                if message["type"] == "http.response.start" and not started["ours"]:
                    started["ours"] = True
                    await _answer(send, 408, f"upload dropped: {body.dropped} ({body.bytes:,} bytes received)")
                return
            if message["type"] == "http.response.start":
                started["theirs"] = True
            await send(message)

        try:
            await self.app(scope, body, guarded)
        except Exception:
            if not body.dropped:
                raise
        if body.dropped:
            if body.dropped == "stalled" and self.on_stall is not None:
                with contextlib.suppress(Exception):
                    self.on_stall()
            log.warning("dropped a %s upload: %s after %.0f s (%d bytes received)", scope.get("path"), body.dropped,
                        time.monotonic() - body.start, body.bytes)
            if not started["ours"] and not started["theirs"]:
                started["ours"] = True
                await settle()
                with contextlib.suppress(Exception):
                    await _answer(send, 408, f"upload dropped: {body.dropped} ({body.bytes:,} bytes received)")


#: bodies up to this size on other endpoints than the upload (the page's own calls: confirm, discard) are not
#: refused when the quota is spent (they are charged all the same), so a user over the quota can still confirm
SMALL_BODY = 64 * 1024


def _bulky(scope: dict) -> bool:
    """An upload, or a body announced larger than :data:`SMALL_BODY` (or of unknown length)."""
    if str(scope.get("path", "")).rstrip("/").endswith("/upload"):
        return True
    length = dict(scope.get("headers", [])).get(b"content-length")
    try:
        return length is None or int(length) > SMALL_BODY
    except ValueError:
        return True


async def _answer(send, status: int, text: str) -> None:
    data = (text + "\n").encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(data)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": data})
