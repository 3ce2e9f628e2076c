"""Events and the rules that act on them (seed 004 §11)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from memlane.config.base import _Section


class EventCondition(_Section):
    field: str  # a dotted path into the event: payload.message_count, subject, type
    op: Literal[">=", ">", "<=", "<", "==", "!=", "in"]
    value: Any


RiskLevel = Literal["low", "medium", "high"]
RISK_ORDER: tuple[str, ...] = ("low", "medium", "high")
# seed 004 §11.1 names its consolidator as an agent; in memlane that agent is the extractor
ACTION_ALIASES = {"run_agent:memory_consolidator": "extract"}


class EventRule(_Section):
    """Seed 004 §11.1: event type + conditions → actions (registered by name).

    An action is a name, or the seed's object `{"action_type": ..., "target": ...}`, read as
    "action_type:target" (`run_agent:memory_consolidator` is memlane's `extract`)."""

    name: str
    event_type: str
    conditions: list[EventCondition] = []
    actions: list[str]
    enabled: bool = True
    # seed 004 §11.1: "auto" runs the actions when the event comes; "confirm" holds them as a
    # pending event (Memory.run_event runs them once a person agrees)
    action_mode: Literal["auto", "confirm"] = "auto"
    risk_level: RiskLevel = "low"  # seed 004 §11.1; above events.auto_max_risk an auto rule waits too

    @field_validator("actions", mode="before")
    @classmethod
    def _action_names(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        out = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("action_type"), str):
                name = item["action_type"] + (f":{item['target']}" if item.get("target") else "")
                out.append(ACTION_ALIASES.get(name, name))
            else:
                out.append(item)
        return out


class EventsConfig(_Section):
    important_score: float = Field(0.8, ge=0, le=1)  # seed 004 §11.2: memory.write.important at ≥ 0.8
    # seed 004 §11.3: events have their own `events` table. Each event is kept with the rules
    # it matched and what became of their actions; its payload without texts (ids, counts,
    # category, score), so a deleted memory's words are not kept there
    persist: bool = False
    keep_days: float = Field(90.0, gt=0)  # not from a seed: persisted events older than this go at consolidate
    # not from a seed: the highest risk_level an "auto" rule may run unattended; a riskier
    # one is held like "confirm". "high": every auto rule runs
    auto_max_risk: RiskLevel = "high"
    rules: list[EventRule] = [
        EventRule(name="extract_on_session_end", event_type="session.ended",
                  conditions=[EventCondition(field="payload.message_count", op=">=", value=1)],
                  actions=["extract"]),
        # seeds 002 §6 / 004 §6.1: one episode per session, none under 3 messages
        EventRule(name="episode_on_session_end", event_type="session.ended",
                  conditions=[EventCondition(field="payload.message_count", op=">=", value=3)],
                  actions=["episode"]),
    ]
