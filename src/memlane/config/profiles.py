"""The profiles: each seed's parameter set, applied under every other layer."""

from __future__ import annotations

from typing import Any

PROFILES_NAMES = ("default", "file-archive", "scored-markdown", "progressive", "companion", "consolidator")


# Each profile is its seed's parameter set; `default` is the blend documented in the README.
PROFILES: dict[str, dict[str, Any]] = {
    "default": {},
    "file-archive": {  # seed 000
        "search": {"activate_on_hit": False},
        # seed 000: the Supervisor's file retrieval, under its own heading
        "context": {"memory_heading": "## Memory", "memory_source": "files", "core_memories": False,
                    "tool_instructions": False},
        "lifecycle": {"schedule_hours": 6.0, "history_per_turn": True},
    },
    "scored-markdown": {  # seed 001
        "policy": {
            "categories": ["preference", "fact", "experience", "workflow", "decision", "skill_usage", "todo"],
            "decay": {"*": {"grace_days": 7, "daily_factor": 0.99}},
            "on_change": "penalise",  # seed 001 §6 phase 1.5: a contradicted memory's score halves
        },
        "lifecycle": {"markdown_primary": True},
    },
    "progressive": {  # seed 002
        "policy": {
            "categories": ["fact", "preference", "skill", "error", "rule"],
            "delete_below": 0.1,
            "demote_below": 0.3,
            "decay_on_merge": False,  # seed 002 §7: compute_decay runs in the nightly pass
            # seed 002 §4 默认保留: PREFERENCE / SKILL permanent, ERROR 7d, RULE 24h for task
            # rules and permanent for behaviour rules; FACT is left to the LLM (由 LLM 判断)
            "default_duration": {"preference": "permanent", "skill": "permanent", "error": "7d",
                                 "rule": "permanent", "rule:task": "24h"},
            "transient_ends_with_session": True,  # seed 002 §4: TRANSIENT "end_session 时清理"
        },
        "context": {"auto_inject_memories": False},
        # seed 002 §4: topic switches archive the old task; §3: the compiler (an LLM) names it
        "session": {"topic_shift_below": 0.2, "topic_llm": True},
        # seed 002 §6: extract_from_turn_v2 on user messages, ≤5 per session, ≥30 chars
        "extraction": {"max_per_session": 5, "min_message_chars": 30, "every_n_user_messages": 1},
        "lifecycle": {"nightly_at": "03:00"},
    },
    "companion": {  # seed 003
        "policy": {
            "categories": ["system", "core", "fact", "episode"],
            "decay": {
                "system": {"never": True},
                "core": {"never": True},
                "episode": {"grace_days": 7, "daily_factor": 0.8, "delete_after_days": 14},
                # seed 003 deletes facts below 0.3 on its 0–3 importance scale: 0.1 on ours
                "fact": {"grace_days": 7, "daily_factor": 0.95, "delete_below": 0.1},
                "*": {"grace_days": 7, "daily_factor": 0.95, "delete_below": 0.1},
            },
            # seed 003 has no archive: a fact goes below importance 0.3 of 3 (its delete line,
            # 0.1 here); seed 001's 0.2 would archive what its reviewer has just kept (0.5 / 3)
            "archive_below": 0.1,
            "boost_amount": 0.1,  # seed 003: +0.3 on a 0–3 scale
            "never_decay_at": 1.0,  # seed 003: importance ≥ 3.0 never decays (3.0 / 3)
            "review_keep_score": None,  # seed 003: KEEP resets to the review's trigger, 0.5 / 3
            "decay_on_merge": False,  # seed 003: MemoryManager decays in a scheduled task
        },
        "search": {"activate_on_hit": False},  # seed 003: retrieval alone never boosts
        # seed 003: the monitor (后台小祥) runs after every turn (每轮对话后), with no cap a session:
        # seed 002 §6's ≤5 is that seed's; a long companion chat keeps its memories current
        "extraction": {"every_n_user_messages": 1, "min_message_chars": 1, "max_per_session": None},
        "session": {"compaction_cap": 30, "episode_memory": True},
        "context": {"history_max_messages": 30},  # seed 003: working memory of 30 messages
    },
    "consolidator": {  # seed 004
        "policy": {"categories": ["knowledge", "preference", "skill", "project"], "default_category": "knowledge"},
        "events": {"persist": True, "rules": [  # seed 004 §11.1 / §11.3; MIN_MESSAGES_TO_CONSOLIDATE = 3
            {"name": "extract_on_session_end", "event_type": "session.ended",
             "conditions": [{"field": "payload.message_count", "op": ">=", "value": 3}], "action_mode": "auto",
             "actions": [{"action_type": "run_agent", "target": "memory_consolidator"}], "risk_level": "low"},
            {"name": "episode_on_session_end", "event_type": "session.ended",
             "conditions": [{"field": "payload.message_count", "op": ">=", "value": 3}], "actions": ["episode"]},
        ]},
        "session": {"compaction_cap": 200, "episode_min_messages": 3},
        # seed 004 §4.1: no message cap, the window fills its token budget (at most the 200
        # uncompacted messages)
        "context": {"history_max_messages": 200},
    },
}
