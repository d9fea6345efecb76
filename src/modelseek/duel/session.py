"""The leaderboard app's browser session: the cookie this server issues, signed with its secret, and its check
(shared by the app and the operator's review page)."""

from __future__ import annotations

import hashlib
import hmac
import re

COOKIE = "modelseek_session"

_SESSION = re.compile(r"^([A-Za-z0-9_-]{43})\.([0-9a-f]{32})$")


def sign_session(secret: bytes, token: str) -> str:
    """``token.signature``: the session value this server issues (HMAC-SHA256 with its secret)."""
    return f"{token}.{hmac.new(secret, token.encode('ascii'), hashlib.sha256).hexdigest()[:32]}"


def valid_session(secret: bytes, value: str | None) -> bool:
    """Whether ``value`` is a session cookie this server issued (a client-chosen value is not)."""
    m = _SESSION.match(value or "")
    return m is not None and hmac.compare_digest(sign_session(secret, m.group(1)), str(value))
