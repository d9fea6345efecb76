"""Model profiles: what is known about a candidate without running it (inference-free, training-free evidence).

A :class:`ModelProfile` records a Hugging Face model's card and config facts: architecture, size, casing,
languages, what it was pre-trained on, its domain, the data set a checkpoint was already fine-tuned on, its head
and labels, and the sources those facts came from. The default ranker reads the *domain evidence*
(:meth:`ModelProfile.evidence_text`) and compares it with a task's texts and label names
(:mod:`modelseek.retrieval.rankers.adaptive`); a candidate with no fine-tuning history gets its prior from its profile.

Where profiles come from, first match wins (:func:`profile_for`):

1. a profile file given by the user (``--profiles FILE``; written by ``modelseek profiles fetch`` when online);
2. the profiles shipped for the 20 NTCIR-19 Subtask A candidates (``resources/profiles/ntcir19.json``, derived
   from their cards and configs; each profile names its sources);
3. the candidate's own model folder (a pool ``path:``, or the organisers' ``data/models/NN`` snapshot): its card
   ``README.md`` and ``config.json``, read as in 4;
4. the local Hugging Face cache (``$HF_HUB_CACHE``/``$HF_HOME/hub``): the card's README (YAML header: tags,
   datasets, languages, license; the first paragraphs of its text) and ``config.json``;
5. the pool file's own metadata (``family``, ``domain``, ``pretraining_data``, ``finetuning_data``, ``language``).

A profile with no domain evidence (a general-purpose model, or nothing known) never moves a ranking.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from .features.sources import hub_offline_reason
from .data.loaders import unpadded
from ..core.io import atomic_write_text, csv_dict_reader, open_text, read_json

#: words of a pre-training description that say nothing about a domain (the generic corpora)
_GENERIC = ("bookcorpus", "wikipedia", "inherits", "same as bert", "openwebtext", "commoncrawl", "roberta-corpus",
            "cc-news", "stories", "80gb", "c4", "cc100", "oscar")


@dataclass(frozen=True)
class ModelProfile:
    """Facts about one model from its card and config (empty where no source said)."""

    hf_id: str
    architecture: str = ""
    params_m: float | None = None
    cased: str = ""
    languages: str = ""
    initialised_from: str = ""
    pretraining_data: str = ""
    domain: str = ""
    fine_tuned_on: str = ""
    head_task: str = ""
    labels: str = ""
    license: str = ""
    card_excerpt: str = ""
    sources: tuple[str, ...] = field(default_factory=tuple)
    origin: str = ""  # where this profile was read: shipped, file, hf-cache, pool

    @property
    def is_general(self) -> bool:
        """True when the profile carries no domain evidence (a general-purpose or an unknown model)."""
        return not self.evidence_text()

    @property
    def multilingual(self) -> bool:
        langs = self.languages.lower()
        return "multilingual" in langs or "languages" in langs or langs.count(",") >= 2

    def domain_name(self) -> str:
        """The card's domain, shortened for an explanation (``clinical/biomedical``)."""
        d = self.domain.strip()
        return "" if not d or d.lower().startswith("general") else d

    def evidence_text(self) -> str:
        """The text that describes what the model read or learned beyond general English (its domain, specific
        pre-training corpus, prior fine-tuning data and labels); empty for a general-purpose model."""
        parts = []
        if self.domain_name():
            parts.append(self.domain_name())
        pre = self.pretraining_data.strip()
        if pre and not _generic_only(pre):
            parts.append(pre)
        if self.fine_tuned_on.strip():
            parts.append(self.fine_tuned_on.strip())
        if parts and self.labels.strip():
            parts.append("labels: " + self.labels.strip())
        return ". ".join(parts)

    def evidence_short(self, width: int = 70) -> str:
        """One phrase for an explanation: the most specific thing the card says."""
        for text in (self.pretraining_data, self.fine_tuned_on, self.domain):
            t = text.strip()
            if t and not _generic_only(t) and not t.lower().startswith("general"):
                t = re.sub(r"\s+", " ", t)
                return t if len(t) <= width else t[: width - 1].rstrip() + "…"
        return ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sources"] = list(self.sources)
        d.pop("origin")
        return d

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], origin: str = "", where: str = "") -> ModelProfile:
        if not isinstance(data, Mapping):
            raise InputError(f"a profile must be a mapping, got {type(data).__name__}", field=where or None)
        unknown = [k for k in data if k not in PROFILE_FIELDS]
        if unknown:
            raise InputError(f"unknown profile field {unknown[0]!r} (fields: {', '.join(PROFILE_FIELDS)})",
                             field=f"{where}.{unknown[0]}" if where else unknown[0])
        hf = data.get("hf_id")
        if not isinstance(hf, str) or not hf.strip():
            raise InputError("a profile needs a non-empty 'hf_id'", field=f"{where}.hf_id" if where else "hf_id")
        kw: dict[str, Any] = {"hf_id": hf.strip(), "origin": origin}
        for f in fields(cls):
            if f.name in ("hf_id", "origin") or f.name not in data or data[f.name] is None:
                continue
            v = data[f.name]
            name = f"{where}.{f.name}" if where else f.name
            if f.name == "params_m":
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < float(v) < 1e7:
                    raise InputError(f"must be a positive number of millions, got {v!r}", field=name)
                kw[f.name] = float(v)
            elif f.name == "sources":
                if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
                    raise InputError("must be a list of strings", field=name)
                kw[f.name] = tuple(v)
            else:
                if not isinstance(v, str):
                    raise InputError(f"must be a string, got {type(v).__name__}", field=name)
                if any(ord(c) < 32 and c not in "\t" for c in v):
                    raise InputError("must not contain control characters", field=name)
                kw[f.name] = v
        return cls(**kw)


#: the fields a profile file may hold (everything but where the profile was read)
PROFILE_FIELDS = tuple(f.name for f in fields(ModelProfile) if f.name != "origin")


def _generic_only(text: str) -> bool:
    t = text.lower()
    words = [w for w in re.split(r"[^a-z0-9]+", t) if w]
    if not words:
        return True
    return any(g in t for g in _GENERIC) and not any(
        k in t for k in ("reddit", "tweet", "financ", "clinical", "mimic", "pubmed", "biomed", "legal",
                         "review", "stock", "medical", "code", "scien", "patent"))


# ------------------------------------------------------------------------------------------ profile files
def read_profiles(path: str | Path) -> dict[str, ModelProfile]:
    """A profile file: JSON ``{"profiles": [{hf_id, ...}, ...]}`` (or a bare list); keyed by HF id."""
    data = read_json(path, "profile file")
    entries = data.get("profiles") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise InputError("a profile file holds a list 'profiles'", path=path, field="profiles")
    out: dict[str, ModelProfile] = {}
    for i, e in enumerate(entries):
        try:
            p = ModelProfile.from_mapping(e, origin=f"file {Path(path).name}", where=f"profiles[{i}]")
        except InputError as exc:
            raise InputError(exc.message, path=path, field=exc.field) from None
        if p.hf_id in out:
            raise InputError(f"duplicate profile for {p.hf_id!r}", path=path, field=f"profiles[{i}].hf_id")
        out[p.hf_id] = p
    return out


def write_profiles(path: str | Path, profiles: Iterable[ModelProfile], **info: Any) -> None:
    doc = {"info": info, "profiles": [p.to_dict() for p in profiles]}
    atomic_write_text(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def shipped_profiles_path() -> Path:
    return Path(str(resources.files("modelseek") / "resources" / "profiles" / "ntcir19.json"))


_SHIPPED: dict[str, ModelProfile] | None = None


def shipped_profiles() -> dict[str, ModelProfile]:
    """The profiles shipped for the 20 NTCIR-19 Subtask A candidates (keyed by HF id)."""
    global _SHIPPED
    if _SHIPPED is None:
        _SHIPPED = {k: _with_origin(v, "shipped") for k, v in read_profiles(shipped_profiles_path()).items()}
    return _SHIPPED


def _with_origin(p: ModelProfile, origin: str) -> ModelProfile:
    from dataclasses import replace

    return replace(p, origin=origin)


def profiles_from_facts(path: str | Path) -> list[ModelProfile]:
    """Profiles from a facts table with the columns of the NTCIR ``model-facts.csv`` (one row per model:
    ``hf_id, architecture, params_m, cased, languages, initialised_from, pretraining_data, domain,
    fine_tuned_on, head_task, labels, license, notes, sources``); ``?`` and empty cells are unknown."""
    out = []
    with open_text(path, "facts file") as fh:
        reader = csv_dict_reader(fh, path)  # a cell of any length, a malformed row: one located line
        if "hf_id" not in (reader.fieldnames or []):
            raise InputError("missing column", path=path, line=1, field="hf_id")
        for lineno, row in enumerate(reader, start=2):
            clean = {k: (v or "").strip() for k, v in row.items() if k}
            kw: dict[str, Any] = {"hf_id": clean["hf_id"]}
            for name in PROFILE_FIELDS[1:]:
                v = clean.get(name, "")
                if not v or v == "?":
                    continue
                if name == "params_m":
                    m = re.match(r"\s*([0-9.]+)", v)
                    if m:
                        kw[name] = float(m.group(1))
                elif name == "sources":
                    kw[name] = v.split()
                else:
                    kw[name] = v
            try:
                out.append(ModelProfile.from_mapping(kw, origin="facts"))
            except InputError as exc:
                raise InputError(exc.message, path=path, line=lineno, field=exc.field) from None
    return out


# ------------------------------------------------------------------------------------------ the HF cache
def hf_cache_dir() -> Path:
    """Where ``huggingface_hub`` keeps downloaded repositories (``HF_HUB_CACHE``, else ``HF_HOME/hub``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def _snapshot(hf_id: str, cache: Path) -> Path | None:
    folder = cache / ("models--" + hf_id.replace("/", "--")) / "snapshots"
    try:
        snaps = sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for s in snaps:
        if (s / "README.md").is_file() or (s / "config.json").is_file():
            return s
    return None


def _front_matter(text: str) -> tuple[dict, str]:
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text
    import yaml

    try:
        meta = yaml.safe_load(text[3:end]) or {}
    except yaml.YAMLError:
        meta = {}
    return (meta if isinstance(meta, dict) else {}), text[end + 4:]


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v if x is not None]
    return [str(v)]


#: data sets that are pre-training corpora (a card's ``datasets`` lists them for models never fine-tuned on them)
PRETRAINING_CORPORA = frozenset({"bookcorpus", "bookcorpusopen", "wikipedia", "wikitext", "openwebtext", "ccnews", "c4",
                                 "oscar", "cc100", "thepile", "pile", "commoncrawl", "stories", "realnews", "mc4",
                                 "redpajama", "falcon", "fineweb", "roots", "wiki40b", "englishwikipedia"})
#: domains a reader takes from a card's tags and description: (pattern, domain); anything else (``exbert``,
#: ``deberta-v1``, task and library names) is not a domain
DOMAIN_WORDS: tuple[tuple[str, str], ...] = (
    (r"financ|stocktwits|\bstocks?\b|bullish|bearish|fintech|earnings", "finance"),
    (r"clinical|mimic|biomedic|medical|pubmed|health record|patients?\b", "clinical/biomedical"),
    (r"\blegal\b|\blaw\b|contracts?\b|court", "legal"),
    (r"tweet|twitter", "social media/twitter"),
    (r"reddit", "social media/reddit"),
    (r"hate|abusive|offensive|toxic", "hate speech/abuse"),
    (r"sentiment|\bsst", "sentiment"),
    (r"emotion", "emotion"),
    (r"reviews?\b|imdb|yelp|amazon", "reviews"),
    (r"question.answering|\bsquad", "QA"),
    (r"\bnews\b", "news"),
    (r"scientific|arxiv|\bscience", "scientific"),
)
#: a card section after which the text no longer describes the model itself (uses, limits, training recipes)
_LATER_SECTION = re.compile(r"intended|how to|usage|\buse\b|limitation|bias|training procedure|evaluation|"
                            r"citation|bibtex|results|preprocessing", re.I)
#: the Hub's organisations for the models once published without one (``bert-base-uncased`` is now
#: ``google-bert/bert-base-uncased``); the old name still resolves there
LEGACY_ORGS = frozenset({"google-bert", "facebookai", "albert", "distilbert", "openai-community", "google-t5"})


def canonical_hf_id(hf_id: str) -> str:
    """The name a model had before the Hub moved it under an organisation: ``google-bert/bert-base-uncased`` and
    ``FacebookAI/roberta-base`` are ``bert-base-uncased`` and ``roberta-base`` (the NTCIR names); others unchanged."""
    text = (hf_id or "").strip()
    org, sep, name = text.partition("/")
    return name if sep and org.lower() in LEGACY_ORGS and name and "/" not in name else text


def folder_identity(path: str | os.PathLike | None) -> str:
    """The NTCIR name of a snapshot the organisers' ``download_models`` wrote: ``.../models/NN`` beside a
    ``models.csv`` whose ``model_id`` NN names it (``data/models/05`` is ``bert-base-uncased``); "" otherwise."""
    if not path or str(path).startswith("package:"):
        return ""
    import csv

    folder = Path(os.path.expanduser(str(path)))
    if folder.parent.name != "models" or not (folder.name.isascii() and folder.name.isdigit()):
        return ""
    table = folder.parent.parent / "models.csv"
    try:
        with open(table, encoding="utf-8-sig", newline="") as fh:
            for row in csv.DictReader(fh):
                mid, name = (row.get("model_id") or "").strip(), (row.get("model_name") or "").strip()
                if mid.isascii() and mid.isdigit() and unpadded(mid) == unpadded(folder.name) and name:
                    return name
    except (OSError, UnicodeDecodeError, csv.Error):
        return ""
    return ""


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", name.lower())


def _domains(texts: Iterable[str]) -> list[str]:
    found: dict[str, None] = {}
    for text in texts:
        for pattern, domain in DOMAIN_WORDS:
            if re.search(pattern, text, re.I):
                found.setdefault(domain, None)
    return list(found)


def _description(body: str) -> str:
    """The card's description of the model: its paragraphs up to the first section about uses, limits, training or
    evaluation (what a reader takes for "what this model is")."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", body):
        p = para.strip()
        if not p:
            continue
        if p.startswith("#"):
            if out and _LATER_SECTION.search(p.splitlines()[0]):
                break
            continue
        if p.startswith(("|", "```", "<", "![")):
            continue
        out.append(p)
        if len(out) >= 3:
            break
    return re.sub(r"\s+", " ", " ".join(out))


def profile_from_card(hf_id: str, readme: str | None, config: Mapping[str, Any] | None,
                      origin: str = "hf-cache", sources: Sequence[str] = ()) -> ModelProfile:
    """A profile read from a model card (README.md text) and a ``config.json`` mapping, as a person reads them:
    the ``datasets`` of the header that are pre-training corpora (bookcorpus, wikipedia, ...) are pre-training data,
    the others fine-tuning data (pre-training data for a masked-LM checkpoint, which has no task head); a domain is a
    known domain named by a tag or by the card's description of the model (``exbert`` or ``deberta-v1`` are not);
    a card that says nothing of a domain gives a general-purpose profile."""
    meta, body = _front_matter(readme or "")
    description = _description(body)
    excerpt = description[:600]
    tags = [t.lower() for t in _as_list(meta.get("tags"))]
    datasets = _as_list(meta.get("datasets"))
    langs = _as_list(meta.get("language"))
    cfg = dict(config or {})
    labels = ""
    id2label = cfg.get("id2label")
    if (isinstance(id2label, dict) and id2label
            and not all(re.fullmatch(r"LABEL_\d+", str(v)) for v in id2label.values())):
        labels = "/".join(str(id2label[k]) for k in sorted(id2label, key=lambda k: int(k) if str(k).isdigit() else 0))
    archs = _as_list(cfg.get("architectures"))
    head = ""
    if archs:
        a = archs[0]
        head = ("sequence classification" if "SequenceClassification" in a else
                "QA span extraction" if "QuestionAnswering" in a else
                "token classification" if "TokenClassification" in a else
                "masked LM" if "MaskedLM" in a or "PreTraining" in a else a)
    pretrained_only = head == "masked LM"  # a pre-training checkpoint: every data set it lists it was pre-trained on
    corpora = [d for d in datasets if _key(d.split("/")[-1]) in PRETRAINING_CORPORA]
    others = [d for d in datasets if d not in corpora]
    pretraining = corpora + (others if pretrained_only else [])
    fine = [] if pretrained_only else others
    domains = _domains([" ".join(tags), description, *others])
    kw = {"hf_id": hf_id, "architecture": str(cfg.get("model_type", "")), "languages": ", ".join(langs),
          "license": str(meta.get("license", "") or ""), "fine_tuned_on": ", ".join(fine), "head_task": head,
          "pretraining_data": ", ".join(pretraining), "labels": labels, "card_excerpt": excerpt,
          "domain": ", ".join(domains) or "general", "sources": list(sources)}
    return ModelProfile.from_mapping({k: v for k, v in kw.items() if v not in ("", None)}, origin=origin)


def profile_from_hf_cache(hf_id: str, cache: Path | None = None) -> ModelProfile | None:
    """The profile of ``hf_id`` from the local Hugging Face cache, or None when it holds neither card nor config."""
    snap = _snapshot(hf_id, cache or hf_cache_dir())
    return None if snap is None else profile_from_folder(hf_id, snap, "hf-cache")


def profile_from_folder(hf_id: str, folder: str | Path, origin: str = "model-folder") -> ModelProfile | None:
    """The profile of a model folder (a Hub snapshot: the card ``README.md`` and ``config.json``, e.g. the
    organisers' ``data/models/05``), or None when it holds neither or they cannot be read."""
    folder = Path(folder)
    readme = config = None
    try:
        if (folder / "README.md").is_file():
            readme = (folder / "README.md").read_text(encoding="utf-8", errors="replace")[:200_000]
        if (folder / "config.json").is_file():
            config = read_json(folder / "config.json", "model config")  # any nesting or number: an InputError
    except (OSError, ValueError):  # InputError is a ValueError: an unreadable card is no profile
        return None
    if readme is None and config is None:
        return None
    return profile_from_card(hf_id, readme, config if isinstance(config, dict) else None, origin, [str(folder)])


def hub_unreachable(hf_ids: Sequence[str]) -> None:
    """Refuse at once (one line) to fetch ``hf_ids`` when the Hub cannot be reached (``HF_HUB_OFFLINE``, or no answer
    within 3 s) and the local Hugging Face cache holds neither card nor config of one of them; without this check
    every file costs huggingface_hub's five retries (about 47 s per model, each retry warned about)."""
    reason = hub_offline_reason()
    if reason is None:
        return
    missing = [h for h in hf_ids if _snapshot(h, hf_cache_dir()) is None]
    if missing:
        raise InputError(f"cannot fetch the card or config of {', '.join(map(repr, missing))}: the Hugging Face Hub "
                         f"is unreachable ({reason}) and the local cache does not hold them; fetch where the Hub is "
                         f"reachable, or write the profile by hand (modelseek profiles show --json)", field="hf_id")


@contextlib.contextmanager
def _quiet_hub():
    """huggingface_hub's own retry warnings off while fetching (a failure is reported once, by the caller)."""
    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    hub_log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        hub_log.setLevel(level)


def fetch_profile(hf_id: str, check_hub: bool = True) -> ModelProfile:
    """Fetch ``hf_id``'s card and config from the Hub (needs the network; the files land in the HF cache). Offline,
    a model the local cache holds is read from there, any other is refused at once (:func:`hub_unreachable`)."""
    try:
        from huggingface_hub import hf_hub_download  # lazy: huggingface_hub
    except ImportError:  # pragma: no cover - a dependency of transformers
        raise InputError("fetching model cards needs huggingface_hub (pip install huggingface_hub)") from None
    if check_hub:
        hub_unreachable([hf_id])

    if check_hub and hub_offline_reason() is not None:  # offline: the local cache holds it (hub_unreachable)
        cached = profile_from_hf_cache(hf_id)
        if cached is not None:
            return cached
    got: dict[str, Any] = {}
    errors = []
    for name in ("README.md", "config.json"):
        try:
            with _quiet_hub():
                got[name] = Path(hf_hub_download(hf_id, name))
        except Exception as exc:  # noqa: BLE001 - offline, gated, missing file: say which
            errors.append(f"{name}: {type(exc).__name__}")
    if not got:
        raise InputError(f"cannot fetch the card or config of {hf_id!r} ({'; '.join(errors)}); "
                         f"offline? write its profile by hand (modelseek profiles show --json) or fetch it where the "
                         f"Hub is reachable", field="hf_id")
    readme = got["README.md"].read_text(encoding="utf-8", errors="replace") if "README.md" in got else None
    try:  # the one strict reader: a config.json nested past the recursion limit or with a 5,000-digit number
        config = read_json(got["config.json"], "model config") if "config.json" in got else None
    except InputError as exc:
        raise InputError(f"{hf_id}: its config.json from the Hub is unreadable ({exc.message})", field="hf_id") \
            from None
    return profile_from_card(hf_id, readme, config, "fetched", [f"https://huggingface.co/{hf_id}"])


# ------------------------------------------------------------------------------------------ resolution
def profile_from_candidate(c: Any) -> ModelProfile | None:
    """A profile from a pool candidate's own metadata (family, domain, pre-training and fine-tuning data)."""
    hf = getattr(c, "hf_id", "") or getattr(c, "id", "")
    if not hf:
        return None
    clean = lambda xs: ", ".join(str(x).replace("-", " ") for x in xs)  # noqa: E731
    kw = {"hf_id": hf, "architecture": getattr(c, "family", "") or "", "domain": getattr(c, "domain", "") or "",
          "languages": getattr(c, "language", "") or "", "pretraining_data": clean(getattr(c, "pretraining_data", ())),
          "fine_tuned_on": clean(getattr(c, "finetuning_data", ()))}
    if getattr(c, "params_m", None):
        kw["params_m"] = float(c.params_m)
    return ModelProfile.from_mapping({k: v for k, v in kw.items() if v not in ("", None)}, origin="pool")


def profile_for(candidate: Any, extra: Mapping[str, ModelProfile] | None = None,
                use_cache: bool = True) -> ModelProfile:
    """The best profile known for a candidate (see the module docstring for the order)."""
    hf = getattr(candidate, "hf_id", "") or getattr(candidate, "id", "")
    if extra and hf in extra:
        return extra[hf]
    shipped = shipped_profiles()
    if hf in shipped:
        return shipped[hf]
    path = getattr(candidate, "path", None)
    # the Hub's current name of an NTCIR candidate (google-bert/..., FacebookAI/...), or its organisers' snapshot
    for same in (canonical_hf_id(hf), folder_identity(path)):
        if same in shipped:
            from dataclasses import replace

            return replace(shipped[same], hf_id=hf)
    if path and not str(path).startswith("package:"):  # a local model folder: its own card and config
        p = profile_from_folder(hf, path)
        if p is not None:
            return p
    if use_cache:
        p = profile_from_hf_cache(hf)
        if p is not None:
            return p
    p = profile_from_candidate(candidate)
    return p if p is not None else ModelProfile(hf_id=hf or "?", origin="none")


def profiles_for(pool: Iterable[Any], extra: Mapping[str, ModelProfile] | None = None) -> list[ModelProfile]:
    return [profile_for(c, extra) for c in pool]


__all__ = ["ModelProfile", "canonical_hf_id", "fetch_profile", "folder_identity", "hf_cache_dir", "hub_unreachable",
           "profile_for", "profile_from_candidate", "profile_from_card", "profile_from_folder", "profile_from_hf_cache",
           "profiles_for", "profiles_from_facts", "read_profiles", "shipped_profiles", "write_profiles"]
