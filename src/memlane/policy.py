"""Scoring rules: initial score, reinforcement, contradiction, decay, thresholds.

Pure functions of a record, the config and a clock; the callers audit what they change.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memlane import validate
from memlane.config import DecayRule, PolicyConfig
from memlane.errors import ValidationError
from memlane.models import MemoryRecord
from memlane.text import keywords

IMPORTANCE_LEVELS = ("high", "medium", "low")


def importance_score(importance: object, cfg: PolicyConfig) -> float:
    """An `importance` argument checked (high, medium, low or a number in [0, 1]; None: medium)
    and turned into a starting score (`initial_score`)."""
    if importance is not None and (isinstance(importance, bool) or not isinstance(importance, str | int | float)):
        raise ValidationError("importance", f"must be high, medium, low or a number in [0, 1], "
                                            f"got {type(importance).__name__}")
    if isinstance(importance, str):
        validate.text("importance", importance, 32)
    return initial_score(importance, cfg)


def initial_score(importance: float | str | None, cfg: PolicyConfig) -> float:
    """Seed 001 §3.4: high .8 / medium .6 / low .4; a number in [0, 1] is taken as is."""
    if importance is None:
        return cfg.importance_medium
    if isinstance(importance, str):
        level = importance.strip().lower()
        table = {"high": cfg.importance_high, "medium": cfg.importance_medium, "low": cfg.importance_low}
        if level in table:
            return table[level]
        try:
            importance = float(level)
        except ValueError:
            raise ValidationError(
                "importance", f"must be high, medium, low or a number in [0, 1], got {importance!r}"
            ) from None
    if isinstance(importance, bool) or not 0.0 <= float(importance) <= 1.0:
        raise ValidationError("importance", f"must be within [0, 1], got {importance!r}")
    return float(importance)


def reinforce(score: float, cfg: PolicyConfig, amount: float | None = None) -> float:
    """Seed 001 §3.4: s + (1 - s) * rate — converges to 1 and never passes it."""
    if amount is not None:
        return min(1.0, score + amount)
    return score + (1.0 - score) * cfg.reinforce_rate


def contradicted(score: float, cfg: PolicyConfig) -> float:
    """Seed 001 phase 1.5: a contradicted memory's score is multiplied by the penalty."""
    return score * cfg.contradiction_penalty


def expires_at(duration: str | None, now: datetime, cfg: PolicyConfig) -> datetime | None:
    """Seed 002: the LLM's duration (permanent|30d|7d|24h|session) or a retention priority."""
    if duration is None:
        return None
    d = duration.strip().lower()
    if d in cfg.retention_days:
        days = cfg.retention_days[d]
        return None if days is None else now + timedelta(days=days)
    if d == "session":
        return now + timedelta(days=cfg.retention_days.get("transient") or 1)
    units = {"d": 86400, "h": 3600, "m": 60}
    if d[:-1].isdigit() and d[-1] in units:
        return now + timedelta(seconds=int(d[:-1]) * units[d[-1]])
    raise ValidationError("duration", f"must be permanent, session, a retention priority or like 7d/24h, got {duration!r}")


PRIORITIES = ("transient", "short_term", "long_term", "permanent")  # seed 002 §4 MemoryPriority
PRIORITY = "priority"  # memory metadata: the seed 002 retention priority a memory was given


def duration_name(duration: str | None) -> str | None:
    """A duration as the schema spells it: "SHORT_TERM", "short-term" → "short_term"."""
    if duration is None:
        return None
    return "_".join(duration.strip().lower().replace("-", " ").split())


def retention(duration: str | None, category: str | None, now: datetime, cfg: PolicyConfig, *,
              task_rule: bool = False) -> tuple[datetime | None, str | None]:
    """Seed 002 §4: (expires_at, priority) of a new memory. No duration: the type's default
    (`default_duration`; "rule:task" for a task rule), else permanent without a priority.
    "session" is TRANSIENT (1 day, and gone when its session ends where the profile says so)."""
    d = duration_name(duration)
    if d is None and category is not None:
        d = (task_rule and cfg.default_duration.get(f"{category}:task")) or cfg.default_duration.get(category)
    if d is None:
        return None, None
    priority = "transient" if d == "session" else d if d in PRIORITIES else None
    return expires_at(d, now, cfg), priority


# ---- merge rules (issue 4) -------------------------------------------------------------

# Where a profile lacks a category an extractor names, the nearest one it has, in order:
# seed 001 has 7 categories, 002 five types, 003 four, 004 four; the extractors speak all.
_CATEGORY_FALLBACKS: dict[str, tuple[str, ...]] = {
    "preference": ("preference", "fact", "knowledge"),
    "fact": ("fact", "knowledge"),
    "knowledge": ("knowledge", "fact"),
    "rule": ("rule", "preference", "knowledge", "fact"),
    "todo": ("todo", "fact", "knowledge", "project"),
    "workflow": ("workflow", "preference", "skill", "fact", "knowledge"),
    "experience": ("experience", "skill", "knowledge", "fact"),
    "skill": ("skill", "skill_usage", "experience", "knowledge", "fact"),
    "skill_usage": ("skill_usage", "skill", "workflow", "fact", "knowledge"),
    "decision": ("decision", "project", "knowledge", "fact"),
    "project": ("project", "decision", "knowledge", "fact"),
    "error": ("error", "experience", "skill", "knowledge", "fact"),
    "core": ("core", "fact", "knowledge"),
}


def category_for(name: str, cfg: PolicyConfig) -> str | None:
    """The profile's category for an extractor's `name` (itself, or its nearest), or None."""
    c = str(name).strip().lower()
    if c in cfg.categories:
        return c
    for alt in _CATEGORY_FALLBACKS.get(c, ()):
        if alt in cfg.categories:
            return alt
    return None


def dedup_threshold(cfg: PolicyConfig, embedder_model: str) -> float:
    """Seed 004 §6: similarity above which an ADD is the same memory; calibrated per embedder."""
    return cfg.dedup_similarity_by_model.get(embedder_model, cfg.dedup_similarity)


def reinforced(mem: MemoryRecord, cfg: PolicyConfig, now: datetime, *, floor: float = 0.0,
               amount: float | None = None) -> MemoryRecord:
    """Seed 001 §3.4 hit: score reinforced (never below `floor`, the higher importance of a
    duplicate, seed 004 §6), last_activated = now, activation_count + 1."""
    score = max(reinforce(mem.score, cfg, amount), floor)
    return mem.model_copy(update={
        "score": min(1.0, score), "last_activated": now, "activation_count": mem.activation_count + 1,
        "updated_at": now, "status": "active" if score >= cfg.archive_below else mem.status,
    })


def penalised(mem: MemoryRecord, cfg: PolicyConfig, now: datetime) -> MemoryRecord:
    """Seed 001 phase 1.5: a contradicted memory's score × the penalty."""
    return mem.model_copy(update={"score": contradicted(mem.score, cfg), "updated_at": now})


# ---- lifecycle rules (issue 6): decay, thresholds, expiry, "was it used?" ----------------
#
# Decay is computed from `last_activated` and the caller's clock (seed 001 §3.4):
#     effective_days(t) = max(0, whole_days(t - last_activated) - grace_days)
#     score(now) = score_at_last_decay * daily_factor ** (effective_days(now) - effective_days(decayed_at))
# `decayed_at` is kept in the memory's metadata. Because the exponents add up, one run after
# 30 days and thirty daily runs give the same score (0.99^(days-7), numerically), and a second
# run on the same day changes nothing. A decay review's KEEP later than the last use takes
# `last_activated`'s place in this formula (`decay_start`), not in an episode's age. A reinforcement moves `last_activated` past
# `decayed_at`, so the earlier decay no longer counts against the new, fresh period.
#
# Seed 003's "episode ×0.8 after 7 days" and "fact ×0.95 after 7 days" are read as DAILY
# factors once the 7-day grace is over: its MemoryManager runs as a scheduled task, and a
# one-off ×0.95 could never bring a fact from ~1.0 down to its "< 0.3 → delete" rule, so the
# rule would be dead; ×0.8 a day also takes an episode to ~0.2 by day 14, its forced deletion.
# Ages (grace, delete_after_days) count from `last_activated`, which for a memory never used
# again is its `created_at`.

DECAYED_AT = "decayed_at"  # metadata key: when decay was last applied
ALWAYS_PROTECTED = ("core", "system")  # seed 003: core / system never decay, in every profile


def decay_rule(category: str, cfg: PolicyConfig) -> DecayRule:
    """The category's rule, else the profile's "*" rule, else seed 001's (7 d, ×0.99/day)."""
    return cfg.decay.get(category) or cfg.decay.get("*") or DecayRule()


def protected(mem: MemoryRecord, cfg: PolicyConfig) -> bool:
    """Pinned, core/system (or a rule saying `never`), confirmed by the user (seed 003
    `verified`), or at the top of the scale (seed 003 importance ≥ 3.0, `never_decay_at`):
    never decayed, demoted, archived or deleted by policy — except that the top of the scale
    does not save an episode from its forced deletion (`threshold_verdicts`)."""
    return _kept_for_good(mem, cfg) or _at_top(mem, cfg)


def _kept_for_good(mem: MemoryRecord, cfg: PolicyConfig) -> bool:
    return (mem.pinned or mem.category in ALWAYS_PROTECTED or decay_rule(mem.category, cfg).never
            or (cfg.verified_never_decays and mem.verified))


def _at_top(mem: MemoryRecord, cfg: PolicyConfig) -> bool:
    return cfg.never_decay_at is not None and mem.score >= cfg.never_decay_at - _EPS


_EPS = 1e-9  # boosts summed in floating point (0.7 + 0.1 + 0.1 + 0.1) land a hair below 1.0


def review_keep_score(cfg: PolicyConfig) -> float:
    """Seed 003: a decay review's KEEP resets importance to the point whose crossing triggered
    the review (0.5 there; review_below here) unless review_keep_score says otherwise."""
    return cfg.review_below if cfg.review_keep_score is None else cfg.review_keep_score


def whole_days(since: datetime, now: datetime) -> int:
    """Seed 001: `(now - last_activated).days` — whole days, never negative."""
    return max(0, (now - since).days)


REVIEWED = "review"  # memory metadata: the reviewer's last decision ({"mode", "decision", "at", "score"})


def kept_at(mem: MemoryRecord) -> datetime | None:
    """When a decay review last kept the memory, if it did so after its last use."""
    last = mem.metadata.get(REVIEWED)
    if not isinstance(last, dict) or last.get("mode") != "decay" or last.get("decision") != "KEEP":
        return None
    at = _when(last.get("at"))
    return at if at is not None and at > mem.last_activated else None


def decay_start(mem: MemoryRecord) -> datetime:
    """Where the memory's decay period starts: its last use, or a later decay review's KEEP.
    Seed 003's KEEP resets importance to the review's trigger; were the decay not restarted
    too, the next daily run would take it below the trigger and ask the reviewer again, every
    day. So KEEP starts the seed's rule afresh (7 days' grace, then the daily factor), and
    the reviewer sees the memory again once that has brought it down again. Its age (an
    episode's forced deletion) still counts from `last_activated`."""
    kept = kept_at(mem)
    return kept if kept is not None else mem.last_activated


def effective_days(mem: MemoryRecord, at: datetime, rule: DecayRule) -> float:
    return max(0.0, whole_days(decay_start(mem), at) - rule.grace_days)


def _decayed_at(mem: MemoryRecord) -> datetime | None:
    return _when(mem.metadata.get(DECAYED_AT))


def _when(raw: object) -> datetime | None:
    """A time kept in metadata (ISO text), made aware; None when missing or unreadable."""
    if not isinstance(raw, str):
        return None
    try:
        t = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def decay_score(mem: MemoryRecord, now: datetime, cfg: PolicyConfig) -> float:
    """The score after decaying to `now` (unchanged when protected or nothing is due)."""
    rule = decay_rule(mem.category, cfg)
    if protected(mem, cfg):
        return mem.score
    last = _decayed_at(mem)
    done = effective_days(mem, last, rule) if last is not None and last > decay_start(mem) else 0.0
    due = effective_days(mem, now, rule) - done
    if due <= 0:
        return mem.score
    return mem.score * rule.daily_factor ** due


def decayed(mem: MemoryRecord, now: datetime, cfg: PolicyConfig) -> MemoryRecord | None:
    """The memory decayed to `now`, with `decayed_at` recorded; None when nothing changes."""
    score = decay_score(mem, now, cfg)
    if score == mem.score:
        return None
    return mem.model_copy(update={"score": max(0.0, min(1.0, score)), "updated_at": now,
                                  "metadata": {**mem.metadata, DECAYED_AT: now.isoformat()}})


Verdict = tuple[str, str]  # (action, reason)


def threshold_verdicts(mem: MemoryRecord, now: datetime, cfg: PolicyConfig) -> list[Verdict]:
    """What the thresholds say about a (decayed) memory: DELETE alone (seed 001 < 0.05, seed
    002 < 0.1, a category's delete_below or delete_after_days, seed 003), else any of DEMOTE to
    TRANSIENT (seed 002 < 0.3) and ARCHIVE (seed 001 < 0.2) — both in one pass, so a second
    run finds nothing left to do."""
    rule = decay_rule(mem.category, cfg)
    age = whole_days(mem.last_activated, now)
    aged_out = rule.delete_after_days is not None and age >= rule.delete_after_days
    if protected(mem, cfg):
        # seed 003: an episode is deleted after 14 days (强制删除), even at importance ≥ 3.0 —
        # that row's 永不删除 is core's; what a person pinned or confirmed stays
        if aged_out and not _kept_for_good(mem, cfg):
            return [("DELETE", f"{mem.category} unused for {age} days ≥ delete_after_days {rule.delete_after_days:g}")]
        return []
    s = mem.score
    if s < cfg.delete_below:
        return [("DELETE", f"score {s:.3f} < delete_below {cfg.delete_below:g}")]
    if rule.delete_below is not None and s < rule.delete_below:
        return [("DELETE", f"score {s:.3f} < {mem.category} delete_below {rule.delete_below:g}")]
    if aged_out:
        return [("DELETE", f"{mem.category} unused for {age} days ≥ delete_after_days {rule.delete_after_days:g}")]
    if cfg.demote_below is not None and s < cfg.demote_below and mem.metadata.get(PRIORITY) == "short_term":
        # seed 002 §4: SHORT_TERM "compute_decay 低分直接删除" — deleted, not demoted to TRANSIENT
        return [("DELETE", f"SHORT_TERM with score {s:.3f} < demote_below {cfg.demote_below:g}")]
    out: list[Verdict] = []
    if (cfg.demote_below is not None and s < cfg.demote_below
            and (mem.expires_at is None or mem.expires_at > transient_until(now, cfg))):
        out.append(("DEMOTE", f"score {s:.3f} < demote_below {cfg.demote_below:g}: TRANSIENT, expires in 1 day"))
    if s < cfg.archive_below and mem.status == "active":
        out.append(("ARCHIVE", f"score {s:.3f} < archive_below {cfg.archive_below:g}"))
    return out


def transient_until(now: datetime, cfg: PolicyConfig) -> datetime:
    """Seed 002: TRANSIENT keeps a memory one day (`expires_at = now + 1d`)."""
    return now + timedelta(days=cfg.retention_days.get("transient") or 1)


def expired(mem: MemoryRecord, now: datetime, cfg: PolicyConfig) -> bool:
    """Past its `expires_at`. Pinned and core memories never expire by policy; a user's own
    memory does (its duration was meant)."""
    if mem.expires_at is None or mem.expires_at > now:
        return False
    top = cfg.never_decay_at is not None and mem.score >= cfg.never_decay_at - _EPS  # seed 003: 永不删除
    return not (mem.pinned or mem.category in ALWAYS_PROTECTED or decay_rule(mem.category, cfg).never or top)


def over_capacity(mems: list[MemoryRecord], cfg: PolicyConfig) -> list[MemoryRecord]:
    """Seed 004 §10.1: above max_memories, the lowest importance then the least recently
    updated go first (protected memories count, but are never the ones removed)."""
    overflow = len(mems) - cfg.max_memories
    if overflow <= 0:
        return []
    candidates = sorted((m for m in mems if not protected(m, cfg)), key=lambda m: (m.score, m.updated_at, m.id))
    return candidates[:overflow]


# ---- what a person said, and asked to forget (issue 12) ---------------------------------


def stated_by_person(mem: MemoryRecord) -> bool:
    """A person stated or confirmed it (source user / import, verified, or pinned): an LLM's
    operation may not delete it or replace its content unless that person asked to forget it."""
    return mem.source in ("user", "import") or mem.verified or mem.pinned


def names_memory(request: str, content: str) -> bool:
    """Whether a person's "forget …" request names this memory: at least half of the
    request's keywords (and one) appear in it — a CJK word by two of its characters
    (车牌号 ~ 车牌是…), a Latin word by its stem-ish prefix. Looser than the offline
    resolution of the same request (every keyword): the LLM read the whole conversation, but
    the request must still be about this memory; "forget everything" names none."""
    words = [w for w in keywords(request) if w.lower() not in _GENERIC]
    if not words:
        return False
    found = sum(1 for w in words if _mentions(content, w))
    return found >= 1 and 2 * found >= len(words)


def _mentions(text: str, word: str) -> bool:
    if all("\u3400" <= ch <= "\u9fff" for ch in word) and len(word) > 2:
        return sum(1 for ch in dict.fromkeys(word) if ch in text) >= 2
    return _holds_word(text, word)


def restored(mem: MemoryRecord, now: datetime, cfg: PolicyConfig) -> MemoryRecord:
    """A deleted memory a person brings back: its snapshot, made to survive the next
    consolidation — activated now, its score at least every threshold that would delete,
    demote or archive it at once, an expiry already past dropped. Otherwise unchanged."""
    rule = decay_rule(mem.category, cfg)
    floor = max(cfg.archive_below, cfg.delete_below, cfg.demote_below or 0.0, rule.delete_below or 0.0)
    expires = mem.expires_at if mem.expires_at is None or mem.expires_at > now else None
    return mem.model_copy(update={"score": min(1.0, max(mem.score, floor)), "last_activated": now,
                                  "updated_at": now, "expires_at": expires})


_GENERIC = frozenset({"用户", "主人", "user", "users", "the", "and"})


def _holds_word(text: str, word: str) -> bool:
    """A CJK word is in `text` when all its characters are (养猫 ~ 养了一只橘猫); a Latin word
    when its stem-ish prefix is (prefers ~ prefer)."""
    if all("\u3400" <= ch <= "\u9fff" for ch in word):
        return all(ch in text for ch in word)
    return word.lower()[: max(4, len(word) - 2)] in text.lower()


def used_overlap(memory_text: str, reply: str) -> float:
    """Offline "was it used?" (seed 003): the share of the memory's keywords the reply holds."""
    words = [w for w in keywords(memory_text) if w.lower() not in _GENERIC]
    if not words:
        return 0.0
    return sum(1 for w in words if _holds_word(reply, w)) / len(words)
