"""Scoring rules: initial score, reinforcement, contradiction, decay, thresholds.

Pure functions of a record, the config and a clock; the callers audit what they change.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memlane.config import PolicyConfig
from memlane.errors import ValidationError
from memlane.models import MemoryRecord

IMPORTANCE_LEVELS = ("high", "medium", "low")


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
