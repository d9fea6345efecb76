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

import contextlib
import hashlib
import math
import os
import re
import secrets
import tempfile
import time
from pathlib import Path

import pandas as pd

from ..errors import ModelseekError
from ..io import atomic_write_text
from .leaderboard import altered_frame, board_csv, board_json, display_frame
from .publish import StalePreview
from .storage import BoardAltered, Store
from .review_page import ReviewPage
from .middleware import UPLOAD_DEADLINE, UPLOAD_STALL, SessionCookie, _forwarded_client  # noqa: F401 (re-exported)
from .session import COOKIE, valid_session
from .text import name_key, safe_str

#: uploaded files older than this are deleted (identical uploads share one file: not deleted at once)
UPLOAD_TTL = 600.0
#: pre-submissions the page runs at once (Gradio's default is one at a time: one uploader's large refused uploads
#: made every other wait); a taken name is refused before the full parse, so refused uploads are cheap anyway
PRESUBMIT_CONCURRENCY = 4

EMPTY = "No model is published yet. Upload the first one in the **Submit** tab."
_PUNCT = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~&\"'$%=:;,/?@^])")


def md_text(text: object) -> str:
    """``text`` (any value, shown by :func:`~.text.safe_str`) as literal Markdown text: every ASCII punctuation
    character backslash-escaped (CommonMark allows it for all of them), so no user string can open a code span,
    a link, emphasis or HTML."""
    return _PUNCT.sub(r"\\\1", safe_str(text)).replace("\n", " ")


def md_code(text: str) -> str:
    """``text`` in a Markdown code span that it cannot close: the fence is one backtick longer than the
    longest run of backticks inside (CommonMark code spans), padded when the text starts or ends with one."""
    text = safe_str(text).replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def params_text(n) -> str | None:
    """A parameter count as leaderboards show it: ``7.2B``, ``350M``."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n <= 0:
        return None
    return f"{n / 1e9:.1f}B" if n >= 1e9 else (f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n:,.0f}")


def _when(value) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(value)))


def provenance_table(meta: dict | None) -> pd.DataFrame | None:
    """A model's details and provenance as a two-column table for people, the fields leaderboards show
    first: dates (``date``, epoch times) in UTC, durations in seconds and minutes, lm-evaluation-harness's
    process-clock ``start_time`` / ``end_time`` said to be one, nested values as compact JSON."""
    import json

    if meta is None:
        return None
    first = ("model", "type", "n_params", "precision", "source", "team", "_published", "date", "_sha256")
    rows = []
    for key in [k for k in first if k in meta] + [k for k in meta if k not in first]:
        v, k = meta[key], safe_str(key)
        if isinstance(v, str) and (k == "date" or k.endswith(("_time", "_seconds"))):
            with contextlib.suppress(ValueError):
                v = float(v)                   # lm-evaluation-harness writes some numbers as strings
        number = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if number and (k == "date" or (k.endswith("_time") and v > 1e9)):
            text = _when(v)
        elif number and k.endswith("_time"):
            text = f"{v:.1f} s on the evaluation's process clock"
        elif number and k.endswith("_seconds"):
            text = f"{v:,.0f} s ({v / 60:.1f} min)"
        elif number and k == "n_params":
            text = params_text(v) or safe_str(v)
        elif isinstance(v, (dict, list)):
            dumped = json.dumps(safe_tree(v), ensure_ascii=False, sort_keys=True)
            text = dumped if len(dumped) <= 300 else dumped[:299] + "…"
        else:
            text = safe_str(v)
        rows.append({"field": k.lstrip("_"), "value": text})
    return pd.DataFrame(rows, columns=["field", "value"])


def upload_root() -> Path:
    """The folder where Gradio stores the files uploaded through the app."""
    try:
        from gradio.utils import get_upload_folder  # lazy: gradio

        return Path(get_upload_folder()).resolve()
    except ImportError:  # pragma: no cover - gradio is present whenever the app runs
        return Path(os.environ.get("GRADIO_TEMP_DIR", "/tmp/gradio")).resolve()


def pvalue_text(p) -> str:
    """A p-value for people: ``< 1e-16`` where double precision cannot tell it from 0, else 3 significant
    digits."""
    try:
        p = float(p)
    except (TypeError, ValueError):
        return safe_str(p)
    if math.isnan(p):
        return "—"
    return "< 1e-16" if p < 1e-16 else f"{p:.3g}"


def cell(value) -> str | float | int:
    """One stored value as the page shows it (never raises): numbers stay numbers, text is encodable."""
    if isinstance(value, bool) or value is None:
        return safe_str(value)
    if isinstance(value, (int, float)):
        return value
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return value.item()
    except ImportError:  # pragma: no cover
        pass
    return safe_str(value)


def safe_tree(obj):
    """A JSON value whose strings (keys too) can always be encoded."""
    if isinstance(obj, dict):
        return {safe_str(k): safe_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [safe_tree(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return safe_str(obj)
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    return safe_str(obj)


def _href(url) -> str | None:
    """A link target that cannot leave a Markdown link: an http(s) URL with ``( ) < >`` and spaces escaped."""
    text = safe_str(url)
    if not re.match(r"^https?://\S+$", text):
        return None
    for ch, esc in (("(", "%28"), (")", "%29"), ("<", "%3C"), (">", "%3E")):
        text = text.replace(ch, esc)
    return text


def linked_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its ``model`` and ``link`` columns as Markdown: a model name links to its page (the uploaded
    ``source``), the text escaped (:func:`md_text`) so that no name can make another link or markup."""
    if "model" not in df.columns or "link" not in df.columns or not len(df):
        return df
    out = df.copy()
    hrefs = [_href(u) if isinstance(u, str) else None for u in out["link"]]
    out["model"] = [f"[{md_text(m)}]({h})" if h else md_text(m) for m, h in zip(out["model"], hrefs)]
    out["link"] = [f"[{md_text(u)}]({h})" if h else "—" for u, h in zip(out["link"], hrefs)]
    return out


def datatypes(frame) -> list[str]:
    """Gradio's per-column types of a shown frame: Markdown for the model and its link, numbers, text."""
    data = getattr(frame, "data", frame)
    if data is None:
        return []
    return ["markdown" if c in ("Model", "Link") else ("number" if pd.api.types.is_numeric_dtype(data[c]) else "str")
            for c in data.columns]


def safe_frame(df: pd.DataFrame | None) -> pd.DataFrame | None:
    """Every cell through :func:`cell`, every header through :func:`safe_str`."""
    if df is None:
        return None
    out = df.copy()
    out.columns = [safe_str(c) for c in out.columns]
    for col in out.columns:
        if out[col].dtype == object:
            out[col] = out[col].map(cell)
    return out


class LeaderboardApp:
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

    # ------------------------------------------------------------------------------------ uploads
    def _uploaded_path(self, file) -> Path:
        """The path of an uploaded file, refused (without opening it) unless it lies in the upload folder."""
        name: str | os.PathLike | None
        if isinstance(file, (str, os.PathLike)):
            name = file
        else:
            name = getattr(file, "path", None) or getattr(file, "name", None)
        if not name:
            raise ModelseekError("choose a submission file first")
        p = Path(name)
        try:
            real = p.resolve(strict=True)
        except (OSError, RuntimeError):
            raise ModelseekError("the file is not an upload of this page (or it expired: upload it again)") from None
        if self.uploads not in real.parents or p.is_symlink() or not real.is_file():
            raise ModelseekError("only files uploaded through this page are read")
        return real

    def read_upload(self, file) -> tuple[bytes, str]:
        """The bytes of an uploaded file (at most the store's limit; the file is read no further)."""
        p = self._uploaded_path(file)
        limit = self.store.max_bytes
        size = p.stat().st_size
        if size > limit:
            p.unlink(missing_ok=True)
            raise ModelseekError(f"submission too large: {size:,} bytes > limit {limit:,}")
        self._handled.add(p)
        with open(p, "rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise ModelseekError(f"submission too large: more than {limit:,} bytes")
        return data, p.name

    def sweep_stalled(self, stall: float, now: float | None = None) -> int:
        """Delete the partial uploads (``tmp*`` files Gradio writes at the top of its folder while receiving) that
        no byte reached for ``stall`` seconds: a stalled upload's bytes are freed when it is dropped."""
        now = time.time() if now is None else now
        gone = 0
        if self.uploads.is_dir():
            for path in self.uploads.glob("tmp*"):
                try:
                    if path.is_file() and not path.is_symlink() and now - path.lstat().st_mtime >= stall:
                        path.unlink()
                        gone += 1
                except OSError:
                    continue
        return gone

    def sweep_uploads(self, now: float | None = None) -> int:
        """Delete the uploads this app read and the partial uploads Gradio left (``tmp*`` files at the top of
        its folder) once older than ``upload_ttl``, with their emptied folders; returns how many files.
        Identical uploads share one file, so a file is not deleted when first read; other apps' files in
        Gradio's shared folder are left alone (Gradio's ``delete_cache`` removes unread uploads hourly)."""
        now = time.time() if now is None else now
        gone = 0
        candidates = list(self._handled)
        if self.uploads.is_dir():
            candidates += [q for q in self.uploads.glob("tmp*") if q.is_file() and not q.is_symlink()]
        for path in candidates:
            try:
                if now - path.lstat().st_mtime < self.upload_ttl:
                    continue
                path.unlink()
                gone += 1
            except FileNotFoundError:
                pass
            except OSError:
                continue
            self._handled.discard(path)
            folder = path.parent
            try:
                if folder != self.uploads and self.uploads in folder.parents and not any(folder.iterdir()):
                    folder.rmdir()
            except OSError:
                pass
        return gone

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
                    "Near-copies count once: duels against models whose predictions are near-copies of each other "
                    "count as one opponent.")
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
