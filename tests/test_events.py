"""The event bus: typed events, subscribers, rules from config (seed 004 §11)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlane import Memory
from memlane.config import EventCondition, EventRule
from memlane.errors import ConfigError, ValidationError
from memlane.events import EVENT_TYPES, Event
from memlane.models import Scope

from .conftest import PROFILE_NAMES


def three(prefix: str = "msg") -> list[dict]:
    return [{"role": "user", "content": f"{prefix} one about the garden"},
            {"role": "assistant", "content": f"{prefix} two about the roses"},
            {"role": "user", "content": f"{prefix} three about the bees"}]


def test_session_ended_reaches_subscribers_and_runs_the_default_rules(memory: Memory):
    seen: list[Event] = []
    memory.events.subscribe("session.ended", seen.append)
    memory.add_messages("s1", three(), user_id="u")
    results = memory.end_session("s1", user_id="u")
    assert [(e.type, e.subject, e.payload) for e in seen] == [
        ("session.ended", "session:s1", {"session_id": "s1", "message_count": 3})]
    assert [(r.rule, r.action) for r in results] == [("extract_on_session_end", "extract"),
                                                      ("episode_on_session_end", "episode")]
    assert memory.episodes(user_id="u")[0].id == results[1].result.id


def test_rule_conditions_decide(memory: Memory):
    memory.add_messages("s2", three()[:2], user_id="u")
    results = memory.end_session("s2", user_id="u")
    assert [r.rule for r in results] == ["extract_on_session_end"]  # 2 < 3: no episode
    assert memory.episodes(user_id="u") == []


def test_important_writes_and_deletions_are_events(memory: Memory):
    seen: list[Event] = []
    unsubscribe = memory.events.subscribe("*", seen.append)
    high = memory.add("用户对花生过敏", user_id="u", importance="high")
    memory.add("the user likes tea", user_id="u", importance="medium")
    memory.delete(high.id, user_id="u", reason="wrong")
    assert [(e.type, e.payload["memory_id"]) for e in seen] == [
        ("memory.write.important", high.id), ("memory.deleted", high.id)]
    assert seen[0].payload["score"] == 0.8 and seen[0].scope == Scope.of("u")
    assert seen[1].payload["reason"] == "wrong" and seen[1].payload["content"] == "用户对花生过敏"
    unsubscribe()
    memory.add("another important one", user_id="u", importance=0.9)
    assert len(seen) == 2


def test_rules_from_config_with_python_actions(make_memory):
    rules = [{"name": "big_sessions_only", "event_type": "session.ended",
              "conditions": [{"field": "payload.message_count", "op": ">=", "value": 5}], "actions": ["episode"]}]
    memory = make_memory(events={"rules": rules})
    memory.add_messages("small", three(), user_id="u")
    assert memory.end_session("small", user_id="u") == []
    notified: list[str] = []
    memory.events.register_action("notify", lambda e: notified.append(e.payload["content"]) or "sent")
    memory.events.rules.append(EventRule(
        name="tell_me", event_type="memory.write.important", actions=["notify"],
        conditions=[EventCondition(field="payload.category", op="in", value=["rule", "preference"])]))
    memory.add("never push to main", user_id="u", category="rule", importance="high")
    memory.add("lives in Hangzhou", user_id="u", category="fact", importance="high")
    assert notified == ["never push to main"]


def test_unknown_actions_and_types_are_config_errors(tmp_path):
    from .conftest import make_config

    bad_action = [{"name": "x", "event_type": "session.ended", "actions": ["launch_rockets"]}]
    with pytest.raises(ConfigError, match="launch_rockets"):
        Memory(make_config(tmp_path, events={"rules": bad_action}))
    bad_type = [{"name": "x", "event_type": "session.exploded", "actions": ["episode"]}]
    with pytest.raises(ConfigError, match="session.exploded"):
        Memory(make_config(tmp_path, events={"rules": bad_type}))


def test_subscribing_to_an_unknown_type_is_refused(memory: Memory):
    with pytest.raises(ValidationError, match="event_type"):
        memory.events.subscribe("memory.exploded", print)


def test_archiver_events_are_typed_and_delivered(memory: Memory):
    seen: list[Event] = []
    memory.events.subscribe("history_overflow", seen.append)
    memory.events.subscribe("archive_backlog", seen.append)
    now = datetime.now(UTC)
    memory.events.emit(Event.history_overflow(Scope.of("u"), "s1", 301, 2048, now))
    memory.events.emit(Event.archive_backlog(Scope.of("u"), "session:s1", 5, 1, 40, now))
    assert [e.type for e in seen] == ["history_overflow", "archive_backlog"]
    assert set(EVENT_TYPES) == {"session.ended", "memory.write.important", "memory.deleted", "history_overflow",
                                "archive_backlog"}


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_every_profile_writes_an_episode_for_three_messages_and_none_for_two(make_memory, tmp_path, profile):
    memory = make_memory(profile, home=tmp_path / profile)
    memory.add_messages("long", three(), user_id="u")
    memory.add_messages("short", three()[:2], user_id="u")
    memory.end_session("long", user_id="u")
    memory.end_session("short", user_id="u")
    assert [e.session_id for e in memory.episodes(user_id="u")] == ["long"]
