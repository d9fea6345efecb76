"""The leaderboard page's behaviour apart from its layout (:class:`LeaderboardApp`; tests call these handlers
directly): who is asking, the board and its downloads as shown, the Duels tab, pre-submission, confirmation and
discard. Every refusal is a message on the page, never a traceback."""

from __future__ import annotations

import hashlib
import secrets
import tempfile
from pathlib import Path

import pandas as pd

from ..core.errors import ModelseekError
from ..core.io import atomic_write_text
from .leaderboard import altered_frame, board_csv, board_json, display_frame
from .page import linked_frame, md_code, md_text, params_text, pvalue_text, safe_frame, safe_tree
from .publish import StalePreview
from .session import COOKIE, valid_session
from .storage import BoardAltered, Store
from .text import name_key, safe_str
from .uploads import UPLOAD_TTL, UploadFolder, upload_root

EMPTY = "No model is published yet. Upload the first one in the **Submit** tab."


class LeaderboardApp(UploadFolder):
    """The app's behaviour, apart from its layout (tests call these handlers directly)."""

    def __init__(self, store: Store, uploads: Path | None = None, identity_header: str | None = None,
                 upload_ttl: float = UPLOAD_TTL, operators: tuple[str, ...] = ()) -> None:
        self.store = store
        #: the identities that see the review page (:mod:`.review_page`); they need ``identity_header``
        self.operators = tuple(o.strip() for o in operators if o and o.strip())
        if self.operators and not identity_header:
            raise ModelseekError("an operator is a signed-in user: give the proxy's identity header with the "
                                 "operators (serve --identity-header HEADER --operator NAME)")
        self.uploads = (uploads or upload_root()).resolve()
        self.identity_header = identity_header
        self.upload_ttl = upload_ttl
        self._handled: set[Path] = set()     # uploads this app read (Gradio's folder is shared with other apps)
        #: signs the session cookies (:class:`SessionCookie`); a new one per process: a restart ends every
        #: browser session (their pending pre-submissions can no longer be confirmed, and expire)
        self.secret = secrets.token_bytes(32)
        #: bytes are charged as the server receives them (:func:`launch`'s middleware): a pre-submission only
        #: checks the quota
        self.metered = False

    # ------------------------------------------------------------------------------------ who is asking
    def who(self, request) -> tuple[str | None, str | None, str | None]:
        """``(session, identity, uploader)`` of a Gradio request (``None`` parts when unknown)."""
        if request is None:
            return None, None, None
        try:
            cookies = dict(getattr(request, "cookies", {}) or {})
        except Exception:  # noqa: BLE001 - a request without cookies
            cookies = {}
        session = cookies.get(COOKIE) or None
        if session is not None and not valid_session(self.secret, session):
            session = None                       # not issued by this server: no session at all
        identity = None
        if self.identity_header:
            try:
                headers = {k.lower(): v for k, v in dict(getattr(request, "headers", {}) or {}).items()}
            except Exception:  # noqa: BLE001
                headers = {}
            identity = safe_str(headers.get(self.identity_header.lower()) or "").strip()[:300] or None
        host = None
        try:
            host = getattr(getattr(request, "client", None), "host", None)
        except Exception:  # noqa: BLE001
            host = None
        uploader = identity or (f"ip:{host}" if host else session)
        return session, identity, uploader

    def over_quota(self, uploader: str) -> bool:
        """Whether ``uploader`` (as :meth:`who` names them) has spent the day's quota: their next body is refused
        before it is read."""
        limit = self.store.max_daily_bytes
        return limit is not None and self.store.received_today(uploader) >= limit

    def operator_link(self, request=None) -> str:
        """Markdown linking to the review page, for an operator only (anyone else: nothing)."""
        _, identity, _ = self.who(request)
        if identity is None or identity not in self.operators:
            return ""
        waiting = self.store.queued() if self.store.review else 0
        return f"**Operator:** [review queue](review) ({waiting} awaiting review)."

    def _require(self, session, identity) -> None:
        if self.identity_header and identity is None:
            raise ModelseekError("sign in first (this leaderboard accepts submissions from signed-in users)")
        if session is None:
            raise ModelseekError("this page needs its session cookie: reload it (with cookies enabled)")

    # ------------------------------------------------------------------------------------ handlers
    def board(self, level: str | None = "overall", query: str | None = None) -> pd.DataFrame:
        """The leaderboard with the model's type, parameters, precision and link (and, on a board with review,
        who approved it) beside its name; ``query`` keeps the models whose name contains it (case, width and
        invisible characters ignored), ranks unchanged."""
        try:
            df = self.store.leaderboard(level or "overall")
        except BoardAltered as exc:         # the library refuses it: the page and the downloads say why
            return altered_frame(exc.message)
        if not len(df):
            return df
        info = self.store.model_info()
        cols = {"type": [info[m]["type"] for m in df["model"]],
                "params": [params_text(info[m]["n_params"]) for m in df["model"]],
                "precision": [info[m]["precision"] for m in df["model"]],
                "link": [info[m]["source"] for m in df["model"]]}
        if self.store.review:
            cols["reviewed"] = [info[m]["reviewed"] for m in df["model"]]
        for k, (name, values) in enumerate(cols.items()):
            df.insert(2 + k, name, ["—" if v is None else v for v in values])
        if query and query.strip():
            key = name_key(query.strip())
            df = df[[key in name_key(m) for m in df["model"]]].reset_index(drop=True)
        return df

    def shown_board(self, level: str | None = "overall", query: str | None = None):
        """The table as the page shows it: short headers (full names in ``.attrs['titles']``), one number
        format (pandas Styler), every cell encodable, model names linked to their page (:func:`linked_frame`)."""
        return display_frame(safe_frame(linked_frame(self.board(level, query))), self.store.config)

    def exports(self, level: str | None = "overall", query: str | None = None) -> tuple[str, str]:
        """The shown board (this level and search) as formula-safe CSV and JSON files: their paths (one folder per
        content, so concurrent views never overwrite each other's file)."""

        df = self.board(level, query)
        csv_text, json_text = board_csv(df), board_json(df)
        digest = hashlib.sha256((csv_text + json_text).encode("utf-8", "backslashreplace")).hexdigest()[:20]
        folder = Path(tempfile.gettempdir()) / "modelseek-exports" / digest
        folder.mkdir(parents=True, exist_ok=True)
        name = f"leaderboard-{level or 'overall'}".replace("/", "_")
        paths = folder / f"{name}.csv", folder / f"{name}.json"
        for path, text in zip(paths, (csv_text, json_text)):
            if not path.exists():
                atomic_write_text(path, text)
        return str(paths[0]), str(paths[1])

    def empty_note(self) -> str:
        try:
            self.store.require_intact()
        except BoardAltered as exc:
            return f"**Warning:** {md_text(exc.message)}"
        waiting = self.store.queued() if self.store.review else 0
        note = f"{waiting} confirmed submission(s) await the operator's review." if waiting else ""
        return note if self.store.published() else (EMPTY + (f" {note}" if note else ""))

    def models(self) -> list[str]:
        """Published models, best first (the Duels tab opens on the leader)."""
        try:
            board = self.store.leaderboard("overall")
        except BoardAltered:
            return []                   # an altered board has no duels to show (the note says why)
        return [safe_str(m) for m in board["model"]] if len(board) else []

    def duels(self, model: str | None) -> tuple[pd.DataFrame | None, dict | None]:
        if not model:
            return None, None
        details = self.store.duel_details(model)
        for col in ("p_value (beats opponent)", "p_value (opponent beats)"):
            details[col] = details[col].map(pvalue_text)
        return safe_frame(details), safe_tree(self.store.metadata(model))

    def discard(self, token: str | None, request=None) -> str:
        """Drop the staged pre-submission (status Markdown)."""
        if not token:
            return "Nothing is staged."
        session, identity, _ = self.who(request)
        try:
            self.store.discard(token, session=session, identity=identity)
        except ModelseekError as exc:
            return f"**Error:** {md_text(exc)}"
        return "Discarded: nothing was published."

    def problems(self) -> list[str]:
        """Published rows that cannot be shown as stored (they are shown escaped): told to the operator."""
        notes = []
        for sid, model in self.store.published():
            shown = safe_str(model)
            if shown != model or not model.isprintable():
                notes.append(f"submission {sid}: model name {shown!r} is not printable text (shown escaped)")
            try:
                meta = self.store.metadata(model)
                import json

                json.dumps(meta, ensure_ascii=False).encode("utf-8")
            except Exception as exc:  # noqa: BLE001 - the operator is told, the page still renders
                notes.append(f"submission {sid} ({shown!r}): metadata cannot be shown as stored "
                             f"({type(exc).__name__}; shown escaped)")
        return notes

    def presubmit(self, file, request=None) -> tuple[str, object, str | None]:
        """``(status Markdown, preview table or None, token or None)``."""
        try:
            session, identity, uploader = self.who(request)
            if request is not None:
                self._require(session, identity)
            data, name = self.read_upload(file)
            pv = self.store.presubmit(data, source=name, session=session, identity=identity, uploader=uploader,
                                      charged=self.metered)
        except ModelseekError as exc:
            return f"**Error:** {md_text(exc)}", None, None
        except Exception as exc:  # noqa: BLE001 - never a traceback on the page
            return f"**Error:** the submission could not be handled ({md_text(type(exc).__name__)})", None, None
        finally:
            self.sweep_uploads()
        msg = (f"**Preview** for {md_code(pv.model)} (staged file {md_code(name)}): rank {pv.rank} of {len(pv.table)}, "
               f"overall win score {pv.scores['overall']:.2f} (computed in {pv.seconds:.1f} s). Nothing is published "
               "until you confirm" + (" (then the operator reviews it)" if self.store.review else "") + ".")
        if pv.warnings:
            msg += "\n\nWarnings: " + "; ".join(md_text(w) for w in pv.warnings[:10])
        return msg, pv.table, pv.token

    def confirm(self, token: str | None, request=None) -> tuple[str, object, bool]:
        """``(status Markdown, a recomputed preview table or None, published)``."""
        if not token:
            return "**Error:** pre-submit first.", None, False
        session, identity, _ = self.who(request)
        try:
            # one click publishes: the duels against models published since the preview are computed in the
            # confirmation (the message says where the model stands now)
            model = self.store.confirm(token, session=session, identity=identity, recompute=True)
        except StalePreview:  # pragma: no cover - recompute=True never raises it
            return "**Error:** the leaderboard changed; pre-submit again.", None, False
        except ModelseekError as exc:
            return f"**Error:** {md_text(exc)}", None, False
        except Exception as exc:  # noqa: BLE001 - nothing says Published unless it is
            return (f"**Error:** not published: the database could not store it ({md_text(type(exc).__name__)})",
                    None, False)
        if self.store.review:
            return (f"**Awaiting review:** {md_code(model)} was confirmed; it enters the leaderboard and the duels "
                    "once the operator approves it.", None, True)
        board = self.store.leaderboard()
        rank = board.loc[board["model"] == model, "rank"]
        where = f" (rank {int(rank.iloc[0])} of {len(board)} now)" if len(rank) else ""
        return f"**Published** {md_code(model)}{where}.", None, True
