"""Seed 000's file protocol (profile `file-archive`), in the scope's data directory:

    history.json            the conversation as a file: soft cap 200, hard cap 300 / 10 MB,
                            archived: false | "pending" | true, archiveAttempts / archiveFailedAt /
                            archiveNextAt for the back-off
    MEMORY.md               long-term memory (seed 000's memory.md; one file, so that a
                            case-insensitive file system never sees two)
    memory/YYYY-MM-DD-{slug}.md    messages ≤ 5 days old, copied raw
    memory/summary/YYYY-MM-DD.md   daily summaries (older than 5 days, up to last month)
    memory/summary/YYYY-MM.md      monthly summaries (the month before last and older)

history.json is a view of the turns the store holds: `run` first adds every store turn not
yet archived, and mirrors each state change into the store (`turns.archived`). Dates are
calendar dates in the time zone of the clock's `now`.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from memlane.config import ArchiveConfig, ContextConfig, ExtractionConfig
from memlane.errors import BackendError, MemlaneError, ValidationError
from memlane.events import Event
from memlane.llm import LLM, ChatMessage
from memlane.markdown import MEMORY_FILE, atomic_write, read_memory_md, scope_dir
from memlane.models import Scope, Turn
from memlane.parts import Archiving, Parts
from memlane.retrieval import bm25
from memlane.text import cut, estimate_tokens, fts_terms, language_of, seed000_keywords

log = logging.getLogger(__name__)

HISTORY_FILE = "history.json"
STATE_FILE = ".archive-state.json"
LOCK_FILE = ".history.lock"
Archived = bool | Literal["pending"]
Bucket = Literal["raw", "daily", "monthly"]


# ---- history.json -------------------------------------------------------------------------


@dataclass
class HistoryMessage:
    """One history.json entry; unknown keys a person or another tool wrote are kept."""

    id: str
    role: str
    text: str
    created_at: datetime
    session_id: str = ""
    seq: int = 0
    archived: Archived = False
    attempts: int = 0
    failed_at: datetime | None = None
    next_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.extra, "id": self.id, "sessionId": self.session_id, "seq": self.seq,
                               "role": self.role,
                               "text": self.text, "createdAt": self.created_at.isoformat(), "archived": self.archived}
        if self.attempts:
            out["archiveAttempts"] = self.attempts
        if self.failed_at:
            out["archiveFailedAt"] = self.failed_at.isoformat()
        if self.next_at:
            out["archiveNextAt"] = self.next_at.isoformat()
        return out

    @classmethod
    def from_json(cls, raw: Any, where: str) -> HistoryMessage:
        if not isinstance(raw, dict):
            raise ValidationError(where, "must be an object")
        known = {"id", "sessionId", "seq", "role", "text", "createdAt", "archived",
                 "archiveAttempts", "archiveFailedAt", "archiveNextAt"}
        archived = raw.get("archived", False)
        if archived not in (False, True, "pending"):
            raise ValidationError(f"{where}.archived", f'must be false, "pending" or true, got {archived!r}')
        try:
            return cls(
                id=str(raw["id"]), role=str(raw.get("role", "user")), text=str(raw.get("text", "")),
                created_at=datetime.fromisoformat(raw["createdAt"]), session_id=str(raw.get("sessionId", "")),
                seq=int(raw.get("seq", 0)), archived=archived, attempts=int(raw.get("archiveAttempts", 0)),
                failed_at=_opt_time(raw.get("archiveFailedAt")), next_at=_opt_time(raw.get("archiveNextAt")),
                extra={k: v for k, v in raw.items() if k not in known},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError(where, f"needs id and an ISO createdAt ({exc})") from None

    @classmethod
    def of_turn(cls, turn: Turn) -> HistoryMessage:
        return cls(id=turn.id, role=turn.role, text=turn.content, created_at=turn.created_at,
                   session_id=turn.session_id, seq=turn.seq)  # only turns not yet archived are added


def _opt_time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _history_bytes(msgs: Sequence[HistoryMessage]) -> int:
    return len(_dump(msgs).encode("utf-8"))


def _dump(msgs: Sequence[HistoryMessage]) -> str:
    return json.dumps([m.to_json() for m in msgs], ensure_ascii=False, indent=1) + "\n"


@dataclass
class CapResult:
    removed: int = 0
    overflow: bool = False  # still over the hard cap with only unarchived messages left
    over_soft: bool = False  # over the soft cap: archive now (seed 000)


def enforce_caps(msgs: list[HistoryMessage], cfg: ArchiveConfig) -> CapResult:
    """Trim history.json: the oldest `archived: true` messages go first; an unarchived or
    pending message is never dropped, however far over the caps the file gets."""
    res = CapResult()
    done = sorted((m for m in msgs if m.archived is True), key=lambda m: m.created_at)

    def over_hard() -> bool:
        return len(msgs) > cfg.history_hard_cap or _history_bytes(msgs) > cfg.history_hard_bytes

    while done and (len(msgs) > cfg.history_soft_cap or over_hard()):
        msgs.remove(done.pop(0))
        res.removed += 1
    res.over_soft = len(msgs) > cfg.history_soft_cap
    res.overflow = over_hard()
    return res


@contextmanager
def history_lock(root: Path) -> Iterator[None]:
    """One writer of history.json at a time, across threads and processes (an flock on a
    lock file; where the platform has none, writers rely on the next sync to heal a lost write)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ---- archiving ----------------------------------------------------------------------------


def age_bucket(day: date, today: date, raw_days: int = 5) -> Bucket:
    """Seed 000: ≤ 5 days raw; older, up to last month, daily; the month before last and
    older, monthly. On Jan 31 December is daily and November monthly; on Feb 1 December is
    monthly."""
    if (today - day).days <= raw_days:
        return "raw"
    last_month = (today.replace(day=1) - timedelta(days=1)).replace(day=1)
    return "daily" if day >= last_month else "monthly"


_SLUG_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def make_slug(text: str, short_id: str, taken: Callable[[str], bool] = lambda s: False, max_len: int = 32) -> str:
    """Seed 000 slug: a–z 0–9 and '-', ≤ 32 characters, from the content's keywords, else
    `mem-{shortId}`; `-{n}` appended when the name is taken."""
    words = [w.replace("_", "-").strip("-") for w in seed000_keywords(text, limit=1000)]
    words = [w for w in words if _SLUG_WORD.fullmatch(w) and not w.replace("-", "").isdigit()]
    counts = Counter(words)
    base = ""
    for w in sorted(dict.fromkeys(words), key=lambda w: -counts[w])[:3]:  # three words read best
        candidate = f"{base}-{w}" if base else w
        if len(candidate) <= max_len:
            base = candidate
    if not base:
        sid = re.sub(r"[^a-z0-9]", "", short_id.lower())[:8] or "0"
        base = f"mem-{sid}"
    slug, n = base, 2
    while taken(slug):
        suffix = f"-{n}"
        slug = base[: max_len - len(suffix)].rstrip("-") + suffix
        n += 1
    return slug


def backoff_delay(attempts: int, cfg: ExtractionConfig) -> timedelta:
    """Seed 000: after failure n wait 10m → 30m → 2h → 6h → 12h; beyond the list, the longer
    backlog interval."""
    steps = cfg.backoff_seconds
    secs = steps[attempts - 1] if 1 <= attempts <= len(steps) else cfg.backlog_backoff_seconds
    return timedelta(seconds=secs)


Summarizer = Callable[[str, str, str], str]  # (kind "daily"/"monthly", label, text) → summary

_SUMMARY_PROMPT = {
    "en": ("Summarize this conversation record ({kind} summary for {label}) as short Markdown bullet "
           "points: facts, decisions, preferences, problems and open tasks. Keep names, numbers and "
           "dates. If an earlier summary is included, merge it in. No preamble."),
    "zh": ("把下面的对话记录（{label} 的{kind}）总结成简短的 Markdown 要点：事实、决定、偏好、问题和待办。"
           "保留名称、数字和日期。如果包含之前的摘要，请合并进去。不要写开场白。"),
}


def llm_summarizer(llm: LLM) -> Summarizer:
    def summarize(kind: str, label: str, text: str) -> str:
        lang = language_of(text)
        kind_text = {"daily": "日摘要", "monthly": "月摘要"}[kind] if lang == "zh" else kind
        msgs: list[ChatMessage] = [
            {"role": "system", "content": _SUMMARY_PROMPT[lang].format(kind=kind_text, label=label)},
            {"role": "user", "content": text},
        ]
        reply = llm.complete(msgs).strip()
        if not reply:
            raise BackendError(f"the LLM returned an empty {kind} summary for {label}")
        return reply

    return summarize


def extractive_summary(kind: str, label: str, text: str, max_items: int | None = None) -> str:
    """Offline summary: the lines that carry the most of the record's frequent keywords,
    kept in their original order, each cut to 160 characters."""
    limit = max_items or (12 if kind == "daily" else 30)
    lines = [ln.strip() for ln in text.split("\n") if ln.strip() and not ln.startswith("#")]
    freq = Counter(w for ln in lines for w in set(seed000_keywords(ln, limit=50)))
    scored = [(sum(freq[w] for w in set(seed000_keywords(ln, limit=50))), i) for i, ln in enumerate(lines)]
    keep = sorted(i for _, i in sorted(scored, key=lambda s: (-s[0], s[1]))[:limit])
    return "\n".join("- " + cut(lines[i].lstrip("- "), 160) for i in keep)


def _transcript(msgs: Sequence[HistoryMessage], tz: Any) -> str:
    return "\n".join(f"- {m.created_at.astimezone(tz).strftime('%H:%M')} {m.role}: {m.text}" for m in msgs)


@dataclass
class ArchiveReport:
    ran: bool = False
    reason: str = ""
    archived: int = 0
    failed: int = 0
    removed: int = 0
    history: int = 0
    unarchived: int = 0
    files: list[str] = field(default_factory=list)
    buckets: dict[str, int] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)


class FileArchive:
    """history.json and the memory/ tree of one scope."""

    def __init__(
        self,
        root: Path,
        cfg: ArchiveConfig,
        retry: ExtractionConfig,
        *,
        summarize: Summarizer | None = None,
        emit: Callable[[str, str, dict[str, Any]], None] = lambda kind, subject, payload: None,
        mirror: Callable[[Sequence[str], str], None] = lambda ids, state: None,
    ) -> None:
        self.root = root
        self.cfg = cfg
        self.retry = retry
        self.summarize = summarize or extractive_summary
        self.emit = emit
        self.mirror = mirror
        self._known: set[str] = set()  # ids the file held when last read or written here

    @property
    def history_path(self) -> Path:
        return self.root / HISTORY_FILE

    def load(self) -> list[HistoryMessage]:
        """history.json as messages; a broken file is reported, never overwritten."""
        msgs = self._read()
        self._known = {m.id for m in msgs}
        return msgs

    def _read(self) -> list[HistoryMessage]:
        path = self.history_path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValidationError(
                "history.json", f"{path} is not valid JSON ({exc}); fix it or move it away, memlane will not overwrite it"
            ) from None
        if not isinstance(data, list):
            raise ValidationError("history.json", f"{path} must hold a JSON list of messages")
        return [HistoryMessage.from_json(raw, f"history.json[{i}]") for i, raw in enumerate(data)]

    def save(self, msgs: list[HistoryMessage]) -> None:
        """Write `msgs`, first taking in the messages a per-turn writer appended since `load`
        (an archive run summarises for a while; their turns must not drop out of the file)."""
        with history_lock(self.root):
            try:
                current = self._read()
            except ValidationError:
                current = []  # broken meanwhile: ours is the good copy
            have = {m.id for m in msgs}
            new = [m for m in current if m.id not in have and m.id not in self._known]
            if new:
                msgs.extend(new)
                msgs.sort(key=lambda m: m.created_at)
            self.write(msgs)

    def write(self, msgs: Sequence[HistoryMessage]) -> None:
        """Write `msgs` as they are (the caller holds `history_lock`)."""
        atomic_write(self.history_path, _dump(msgs))
        self._known = {m.id for m in msgs}

    def _state(self) -> dict[str, Any]:
        try:
            data = json.loads((self.root / STATE_FILE).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def last_run(self) -> datetime | None:
        return _opt_time(self._state().get("lastRunAt"))

    @staticmethod
    def sync(msgs: list[HistoryMessage], turns: Sequence[Turn]) -> int:
        """Add the store's turns that history.json lacks (archived ones were trimmed on
        purpose and stay out); returns how many were added."""
        have = {m.id for m in msgs}
        new = [HistoryMessage.of_turn(t) for t in turns if t.id not in have and t.archived != "true"]
        msgs.extend(new)
        msgs.sort(key=lambda m: m.created_at)
        return len(new)

    def due(self, msgs: Sequence[HistoryMessage], now: datetime, *, first_run: bool = True) -> str:
        """Why archiving should run now ('' when it should not): seed 000's triggers. Without
        `first_run`, a scope never archived counts its 6 hours from when history.json was
        first kept (a per-turn check must not archive the very first message)."""
        unarchived = sum(1 for m in msgs if m.archived is False)
        if unarchived > self.cfg.trigger_unarchived:
            return f"{unarchived} unarchived messages > {self.cfg.trigger_unarchived}"
        if any(m.archived is False and m.attempts and m.next_at is not None and m.next_at <= now for m in msgs):
            return "a failed group's back-off has passed"
        last = self.last_run()
        if last is None and not first_run:
            last = _opt_time(self._state().get("keptSince"))
            if last is None:
                return ""
            if unarchived and now - last >= timedelta(hours=self.cfg.trigger_hours):
                return f"{self.cfg.trigger_hours:g} hours since history.json was started"
            return ""
        if unarchived and (last is None or now - last >= timedelta(hours=self.cfg.trigger_hours)):
            return "first run" if last is None else f"{self.cfg.trigger_hours:g} hours since the last run"
        return ""

    def keep(self, turns: Sequence[Turn], now: datetime) -> str:
        """Seed 000's per-round check ("Supervisor 每轮检查"): add `turns` to history.json and
        trim it to its caps; returns why archiving should run now ('' when it should not)."""
        with history_lock(self.root):
            msgs = self.load()
            added = self.sync(msgs, turns)
            caps = enforce_caps(msgs, self.cfg)
            if added or caps.removed or not self.history_path.exists():
                self.write(msgs)
            if not self._state():
                atomic_write(self.root / STATE_FILE, json.dumps({"keptSince": now.isoformat()}) + "\n")
        if caps.overflow:
            return "history_overflow"
        if caps.over_soft:
            return "over the soft cap"
        return self.due(msgs, now, first_run=False)

    def run(self, turns: Sequence[Turn], now: datetime, *, force: bool = False) -> ArchiveReport:
        """One Supervisor round: sync, caps, and archiving when a trigger holds (or `force`,
        which also ignores the back-off: a person asked for it)."""
        report = ArchiveReport()
        msgs = self.load()
        for m in msgs:  # "pending" left by a crashed run: archive it again
            if m.archived == "pending":
                m.archived = False
        self.sync(msgs, turns)
        caps = enforce_caps(msgs, self.cfg)
        report.removed += caps.removed
        if caps.overflow:
            report.events.append("history_overflow")
            newest = msgs[-1].session_id if msgs else ""
            self.emit("history_overflow", f"session:{newest}", {
                "session_id": newest, "count": len(msgs), "bytes": _history_bytes(msgs),
                "hard_cap": self.cfg.history_hard_cap})
        reason = ("forced" if force else "history_overflow" if caps.overflow
                  else "over the soft cap" if caps.over_soft else self.due(msgs, now))
        if reason:
            report.ran, report.reason = True, reason
            self._archive(msgs, now, force, report)
            report.removed += enforce_caps(msgs, self.cfg).removed
            atomic_write(self.root / STATE_FILE, json.dumps({"lastRunAt": now.isoformat()}) + "\n")
        self.save(msgs)
        report.history = len(msgs)
        report.unarchived = sum(1 for m in msgs if m.archived is not True)
        return report

    def _archive(self, msgs: list[HistoryMessage], now: datetime, force: bool, report: ArchiveReport) -> None:
        todo = [m for m in msgs if m.archived is False and (force or m.next_at is None or m.next_at <= now)]
        if not todo:
            return
        for m in todo:
            m.archived = "pending"
        self.save(msgs)  # pending is on disk before the slow part: the caps cannot take it
        self.mirror([m.id for m in todo], "pending")
        tz = now.tzinfo
        today = now.date()
        days: dict[date, list[HistoryMessage]] = {}
        for m in todo:
            days.setdefault(m.created_at.astimezone(tz).date(), []).append(m)
        units: list[tuple[Bucket, str, list[HistoryMessage]]] = []
        months: dict[str, list[HistoryMessage]] = {}
        for day, group in sorted(days.items()):
            bucket = age_bucket(day, today, self.cfg.raw_days)
            report.buckets[bucket] = report.buckets.get(bucket, 0) + len(group)
            if bucket == "monthly":
                months.setdefault(day.strftime("%Y-%m"), []).extend(group)
            else:
                units.append((bucket, day.isoformat(), group))
        units += [("monthly", label, group) for label, group in sorted(months.items())]
        for bucket, label, group in units:
            try:
                path = self._write_unit(bucket, label, group, tz)
            except (MemlaneError, OSError) as exc:
                log.warning("archiving %s (%s) failed: %s", label, bucket, exc)
                self._failed(group, now, report)
                continue
            report.files.append(path.relative_to(self.root).as_posix())
            for m in group:
                m.archived, m.attempts, m.failed_at, m.next_at = True, 0, None, None
            report.archived += len(group)
            self.mirror([m.id for m in group], "true")

    def _failed(self, group: list[HistoryMessage], now: datetime, report: ArchiveReport) -> None:
        backlog = False
        for m in group:
            m.archived = False
            m.attempts += 1
            m.failed_at = now
            m.next_at = now + backoff_delay(m.attempts, self.retry)
            backlog = backlog or m.attempts >= self.retry.max_attempts
        report.failed += len(group)
        self.mirror([m.id for m in group], "false")
        if backlog:
            report.events.append("archive_backlog")
            self.emit("archive_backlog", f"session:{group[0].session_id}", {
                "attempts": max(m.attempts for m in group), "first_seq": group[0].seq, "last_seq": group[-1].seq,
                "messages": len(group), "first_at": group[0].created_at.isoformat()})

    def _write_unit(self, bucket: Bucket, label: str, group: list[HistoryMessage], tz: Any) -> Path:
        text = _transcript(group, tz)
        if bucket == "raw":
            mem_dir = self.root / "memory"
            slug = make_slug(" ".join(m.text for m in group), group[0].id,
                             lambda s: (mem_dir / f"{label}-{s}.md").exists(), self.cfg.slug_max)
            path = mem_dir / f"{label}-{slug}.md"
            body = "\n\n".join(
                f"## {m.created_at.astimezone(tz).strftime('%H:%M')} {m.role}\n{m.text.strip()}" for m in group)
            atomic_write(path, f"# {label}\n\n{body}\n")
            return path
        path = self.root / "memory" / "summary" / f"{label}.md"
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        if before:  # a later run for the same day or month: merge with what is there
            text = _body(before) + "\n" + text
        record = ""
        if bucket == "monthly":
            # seed 000: a monthly summary merges the month's daily summaries, and hides from
            # retrieval exactly those it merged (issue 13: not the ones it never saw)
            merged = merged_dailies(before) or set()
            new = sorted(p for p in path.parent.glob(f"{label}-[0-9][0-9].md") if p.name not in merged)
            text = "\n".join([*(_body(p.read_text(encoding="utf-8")) for p in new), text])
            record = f"{_MERGED}{' '.join(sorted(merged | {p.name for p in new}))} -->\n"
        summary = self.summarize(bucket, label, text)
        atomic_write(path, f"# {label} summary\n{record}\n{summary.strip()}\n")
        return path


_MERGED = "<!-- merged: "


def merged_dailies(text: str) -> set[str] | None:
    """The daily summaries (file names) a monthly summary was built from, as it records them;
    None when it records nothing (a file written by hand or by an older memlane)."""
    for line in text.split("\n")[:5]:
        if line.startswith(_MERGED):
            return set(line[len(_MERGED):].removesuffix("-->").split())
    return None


def _body(text: str) -> str:
    return "\n".join(ln for ln in text.split("\n") if not ln.startswith("#") and not ln.startswith("<!--")).strip()


# ---- retrieval ----------------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9_]+|[\u4e00-\u9fff]+")


def tokens(text: str) -> list[str]:
    """Index terms of a file: Latin words of ≥ 2 characters (seed 000's regex) and CJK
    bigrams, so a query keyword such as 部署 is found inside 上次部署使用了."""
    out: list[str] = []
    for m in _TOKEN.finditer(text.lower()):
        w = m.group()
        if "\u4e00" <= w[0] <= "\u9fff":
            out += [w] if len(w) == 1 else [w[i : i + 2] for i in range(len(w) - 1)]
        elif len(w) >= 2:
            out.append(w)
    return out


def bm25_scores(docs: Sequence[Sequence[str]], query: Sequence[str], k1: float = bm25.K1,
                b: float = bm25.B) -> list[float]:
    """Okapi BM25 with Lucene's idf, ln(1 + (N - df + .5) / (df + .5)): memlane's own
    (retrieval/bm25.py) rather than bm25s', so the scores are exact, stable and checkable by
    hand against seed 000's threshold of 0.2."""
    n = len(docs)
    if not n:
        return []
    avgdl = sum(len(d) for d in docs) / n or 1.0
    counts = [Counter(d) for d in docs]
    scores = [0.0] * n
    for term in dict.fromkeys(query):
        df = sum(1 for c in counts if term in c)
        if not df:
            continue
        idf = bm25.lucene_idf(n, df)
        for i, c in enumerate(counts):
            tf = c.get(term, 0)
            if tf:
                scores[i] += bm25.term_score(idf, tf, len(docs[i]), avgdl, k1, b)
    return scores


@dataclass
class FileHit:
    path: str
    content: str
    score: float
    method: Literal["bm25", "substring"] = "bm25"
    memory_id: str = ""  # a MEMORY.md entry taken from the store (see `corpus`)


def corpus(root: Path, memories: Sequence[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """(path, text) of every searchable document: MEMORY.md's active entries, memory/*.md,
    and memory/summary/*.md minus the daily summaries a monthly summary merged (the ones it
    records; one that records nothing hides its whole month, seed 000's rule as written). Raw
    files are all searched: seed 000's "≤ 5 days" is their age when written, and nothing
    else holds those messages later. `memories` ((id, content) pairs) stand in for MEMORY.md's
    entries: the store's active memories, fresher than the file between refreshes."""
    if memories is None:
        docs = [(MEMORY_FILE, e.content) for e in read_memory_md(root / MEMORY_FILE) if not e.archived]
    else:
        docs = [(f"{MEMORY_FILE}#{mid}", content) for mid, content in memories]
    mem_dir = root / "memory"
    if mem_dir.is_dir():
        docs += [(f"memory/{p.name}", _body(p.read_text(encoding="utf-8"))) for p in sorted(mem_dir.glob("*.md"))]
    summary = mem_dir / "summary"
    if summary.is_dir():
        files = {p.name: p.read_text(encoding="utf-8") for p in sorted(summary.glob("*.md"))}
        hidden: set[str] = set()
        for name, text in files.items():
            if len(name) == len("YYYY-MM.md"):
                merged = merged_dailies(text)
                hidden |= merged if merged is not None else {n for n in files if n.startswith(name[:7] + "-")}
        docs += [(f"memory/summary/{name}", _body(text)) for name, text in files.items() if name not in hidden]
    return [(path, text) for path, text in docs if text]


def search_files(root: Path, keywords: Sequence[str], cfg: ArchiveConfig,
                 memories: Sequence[tuple[str, str]] | None = None) -> list[FileHit]:
    """BM25 over the files (k1 1.2, b 0.75, score ≥ 0.2); when that finds nothing, a plain
    substring scan (seed 000 falls back to `rg`)."""
    docs = corpus(root, memories)
    if not docs or not keywords:
        return []
    scores = bm25_scores([tokens(t) for _, t in docs], fts_terms([k.lower() for k in keywords]),
                         cfg.bm25_k1, cfg.bm25_b)
    hits = [FileHit(p, t, s) for (p, t), s in zip(docs, scores, strict=True) if s >= cfg.bm25_min_score]
    if not hits:
        for p, t in docs:
            n = sum(1 for k in keywords if k.lower() in t.lower())
            if n:
                hits.append(FileHit(p, t, float(n), "substring"))
    for h in hits:  # "MEMORY.md#id": an entry of the store's, shown as seed 000's [memory.md] tag
        h.path, _, h.memory_id = h.path.partition("#")
    # best first; among equals the newest file (names sort by date)
    return sorted(hits, key=lambda h: (-h.score, _reverse(h.path)))


def _reverse(path: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in path)


def pack_hits(hits: Sequence[FileHit], ctx: ContextConfig, max_tokens: int | None = None) -> list[str]:
    """`[path] content` lines, best first, until 5 hits or the 2048-token budget (seed 000)."""
    lines: list[str] = []
    used = 0
    budget = ctx.memory_tokens if max_tokens is None else max_tokens
    for h in hits:
        line = f"[{h.path}] {cut(' '.join(h.content.split()), ctx.snippet_chars)}"
        cost = estimate_tokens(line)
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
        if len(lines) >= ctx.memory_max_hits:
            break
    return lines


def query_keywords(pending: str, recent: Sequence[str], limit: int = 6) -> list[str]:
    """Seed 000: keywords from the pending input first, then the last 5 history messages."""
    return seed000_keywords("\n".join([pending, *recent[-5:]]), limit)


# ---- glue to a Memory -------------------------------------------------------------------


def file_archive(mem: Archiving, scope: Scope) -> FileArchive:
    def emit(kind: str, subject: str, payload: dict[str, Any]) -> None:
        mem.events.emit(Event(kind, scope, subject, payload, mem.clock()))

    def mirror(ids: Sequence[str], state: str) -> None:
        mem.store.set_turns_archived(scope, list(ids), state)

    return FileArchive(
        scope_dir(mem.config.home, scope), mem.config.archive, mem.config.extraction,
        summarize=llm_summarizer(mem.llm) if mem.llm is not None else None, emit=emit, mirror=mirror,
    )


def run_archive(mem: Archiving, scope: Scope, *, force: bool = False) -> ArchiveReport:
    turns = mem.store.get_turns(scope)
    return file_archive(mem, scope).run(turns, mem.clock(), force=force)


def archive_context(mem: Archiving, scope: Scope, pending: str) -> tuple[str, list[FileHit]]:
    """The `## Memory` block seed 000 injects before the agent answers ('' when nothing hits)."""
    fa = file_archive(mem, scope)
    msgs = fa.load()
    fa.sync(msgs, mem.store.get_turns(scope, limit=5, newest_first=True))
    words = query_keywords(pending, [m.text for m in msgs[-5:]], mem.config.search.keywords_max)
    hits = search_files(fa.root, words, mem.config.archive)
    lines = pack_hits(hits, mem.config.context)
    return ("## Memory\n" + "\n".join(lines) if lines else ""), hits[: len(lines)]


def context_block(mem: Parts, scope: Scope, pending: str, recent: Sequence[str], max_tokens: int,
                  skip: set[str] | frozenset[str] = frozenset(), heading: str = "## Memory") -> tuple[str, list[FileHit]]:
    """`build_context`'s relevant memories under `context.memory_source = "files"`: seed 000's
    keywords (the pending input, then the last 5 messages) and BM25 over MEMORY.md's entries
    — read from the store, so a memory is found before the next file refresh — memory/ and
    memory/summary/, `[source] content` lines under `heading` (seed 000's "## Memory") within
    `max_tokens`; '' when nothing hits."""
    now = mem.clock()
    entries = [(m.id, m.content) for m in mem.store.list_memories(scope, status="active")
               if m.id not in skip and (m.expires_at is None or m.expires_at > now)]
    words = query_keywords(pending, list(recent)[-5:], mem.config.search.keywords_max)
    hits = search_files(scope_dir(mem.config.home, scope), words, mem.config.archive, entries)
    lines = pack_hits(hits, mem.config.context, max_tokens - estimate_tokens(heading + "\n"))
    return (heading + "\n" + "\n".join(lines) if lines else ""), hits[: len(lines)]


def after_turns(mem: Archiving, scope: Scope, turns: Sequence[Turn]) -> ArchiveReport | None:
    """Seed 000 per turn (`lifecycle.history_per_turn`): history.json gets the new turns and
    its caps; when a trigger holds, archiving runs — in the background worker when an LLM
    writes the summaries (the caller never waits on it), else here (extractive, quick)."""
    if not mem.config.lifecycle.history_per_turn:
        return None
    fa = file_archive(mem, scope)
    # the newest turns of the scope, not only these: a write lost to a crash is healed here
    recent = mem.store.get_turns(scope, limit=len(turns) + 20, newest_first=True)
    fresh = {t.id: t for t in [*recent[::-1], *turns]}  # by id: a back-dated turn is not among the newest
    if not fa.keep(list(fresh.values()), mem.clock()):
        return None
    if mem.llm is not None and not mem.config.extraction.wait_for_llm:
        mem.worker.submit(lambda: run_archive(mem, scope), key=("archive", scope))
        return None
    return fa.run(turns, mem.clock())
