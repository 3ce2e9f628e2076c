"""The offline extractor: Chinese and English statements → the same operations the LLM gives,
plus the user's own "remember / forget" (seed 001 §6 phase 1.5) in both modes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import resources

import pytest

from memlane import Config
from memlane.heuristic import HeuristicExtractor
from memlane.importers import parse
from memlane.models import Turn
from memlane.testing import ScriptedLLM

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def extract(text: str, profile: str = "default") -> list[tuple[str, str, float]]:
    turns = [Turn(id="t1", user_id="u", session_id="s", seq=1, role="user", content=text, created_at=NOW,
                  token_count=1)]
    ops = HeuristicExtractor(Config.load(profile)).extract(turns, now=NOW).operations
    assert all(op.op == "ADD" and op.source == "heuristic" for op in ops)
    return [(op.content or "", op.category or "", op.score or 0) for op in ops]


@pytest.mark.parametrize(("text", "expected"), [
    ("我对花生过敏，别推荐花生酱", [("用户对花生过敏", "fact", 0.8)]),
    ("你好，我叫林晓。", [("用户叫林晓", "fact", 0.8)]),
    ("我喜欢喝白茶", [("用户喜欢喝白茶", "preference", 0.6)]),
    ("我比较喜欢安静的咖啡馆", [("用户比较喜欢安静的咖啡馆", "preference", 0.6)]),
    ("我讨厌香菜", [("用户讨厌香菜", "preference", 0.6)]),
    ("我不吃辣", [("用户不吃辣", "preference", 0.8)]),
    ("我从来不喝酒", [("用户从来不喝酒", "preference", 0.8)]),
    ("下周三要做产品评审", [("用户下周三要做产品评审", "todo", 0.8)]),
    ("我下个月要去东京出差", [("用户下个月要去东京出差", "todo", 0.8)]),
    ("我家里养了一只橘猫，叫橘子", [("用户家里养了一只橘猫，叫橘子", "fact", 0.6)]),
    ("My name is Lin Xiao.", [("The user's name is Lin Xiao.", "fact", 0.8)]),
    ("I prefer pytest over unittest, so use it in samples.", [("The user prefers pytest over unittest.", "preference", 0.6)]),
    ("I'm allergic to peanuts.", [("The user is allergic to peanuts.", "fact", 0.8)]),
    ("I don't eat spicy food anymore, doctor's advice.", [("The user does not eat spicy food.", "preference", 0.8)]),
    ("I hate cilantro", [("The user dislikes cilantro.", "preference", 0.6)]),
    ("Next week I have to prepare the demo slides.", [("The user has to prepare the demo slides.", "todo", 0.8)]),
    ("I'm training for a half marathon, so I run every Tuesday morning.",
     [("The user is training for a half marathon.", "fact", 0.6),
      ("The user runs every Tuesday morning.", "workflow", 0.6)]),
    # nothing stated about the user: nothing remembered
    ("今天天气不错", []),
    ("我忘了带钥匙", []),
    ("What's the weather like?", []),
    ("I'd like a cup of coffee", []),
])
def test_statements(text, expected):
    got = extract(text)
    assert [(c, cat, pytest.approx(s)) for c, cat, s in expected] == got


def test_categories_map_onto_the_profile(tmp_path):
    # seed 004's four categories: a preference stays, a fact becomes knowledge, a todo too
    got = {c: cat for c, cat, _ in extract("我对花生过敏。我喜欢喝白茶。下周三要做产品评审", "consolidator")}
    assert got == {"用户对花生过敏": "knowledge", "用户喜欢喝白茶": "preference", "用户下周三要做产品评审": "knowledge"}


def test_offline_end_session_extracts_with_source_heuristic(memory):
    memory.add_messages("s1", [{"role": "user", "content": "我对花生过敏，别推荐花生酱"},
                               {"role": "assistant", "content": "记下了"}], user_id="u1")
    [result] = [r for r in memory.end_session("s1", user_id="u1") if r.action == "extract"]
    assert result.result.extractor == "heuristic"
    [m] = memory.list(user_id="u1")
    assert (m.content, m.source, m.score) == ("用户对花生过敏", "heuristic", 0.8)
    assert [h.content for h in memory.search("过敏", user_id="u1")] == ["用户对花生过敏"]


@pytest.mark.parametrize("with_llm", [False, True])
def test_remember_makes_a_pinned_verified_user_memory_at_once(make_memory, with_llm):
    m = make_memory()
    if with_llm:
        m.llm = ScriptedLLM()  # never called: commands do not wait for the LLM
    m.add_messages("s1", [{"role": "user", "content": "记住：我的经理叫Priya，她每周五看我的幻灯片"}], user_id="u1")
    [mem] = m.list(user_id="u1")
    assert mem.content == "用户的经理叫Priya，她每周五看用户的幻灯片"
    assert (mem.source, mem.pinned, mem.verified, mem.score) == ("user", True, True, 0.8)
    m.add_messages("s1", [{"role": "user", "content": "Remember that my daughter's school starts at 8."}],
                   user_id="u1")
    assert "The user's daughter's school starts at 8." in [x.content for x in m.list(user_id="u1")]
    if with_llm:
        assert m.llm.calls == []


def test_remember_this_refers_to_the_previous_message(memory):
    memory.add_messages("s1", [{"role": "user", "content": "我的护照号码放在书房第二个抽屉"},
                               {"role": "user", "content": "记住这个"}], user_id="u1")
    assert [x.content for x in memory.list(user_id="u1") if x.pinned] == ["用户的护照号码放在书房第二个抽屉"]


def test_forget_deletes_matching_memories_at_once(memory):
    cat = memory.add("用户家里养了一只橘猫，叫橘子", user_id="u1", source="extractor")
    tea = memory.add("用户喜欢喝白茶", user_id="u1")
    memory.add_messages("s1", [{"role": "user", "content": "请忘掉我养猫的事"}], user_id="u1")
    assert [x.id for x in memory.list(user_id="u1")] == [tea.id]
    [_, ev] = memory.history(cat.id, user_id="u1")
    assert ev.kind == "DELETE" and ev.actor == "extract:user" and "忘掉" in ev.reason
    assert len(memory.get_turns("s1", user_id="u1")) == 1  # the conversation itself stays
    memory.add("The user prefers pytest over unittest.", user_id="u1")
    memory.add_messages("s2", [{"role": "user", "content": "Please forget that I prefer pytest."}], user_id="u1")
    assert [x.id for x in memory.list(user_id="u1")] == [tea.id]


def test_forget_report_lists_what_was_deleted_and_what_matched_nothing(memory):
    from memlane.importers import Conversation

    tea = memory.add("用户喜欢喝白茶", user_id="u1", pinned=True)
    memory.import_conversations([Conversation(session_id="s1", messages=[  # imports trigger nothing
        {"role": "user", "content": "忘掉我喜欢白茶这件事"},
        {"role": "user", "content": "Forget my bank password."},
    ])], user_id="u1")
    report = memory.extract("s1", user_id="u1")
    assert [m.id for m in report.deleted] == [tea.id]  # the user may delete even a pinned memory
    assert report.unmatched_forgets == ["my bank password"]
    assert memory.list(user_id="u1") == []


def test_sample_conversation_yields_sensible_memories_offline(memory):
    data = json.loads(resources.files("memlane.data").joinpath("sample_conversation.json").read_text("utf-8"))
    convs = parse(data, "sample_conversation.json")
    memory.import_conversations(convs, user_id="lin")
    for c in convs:
        memory.end_session(c.session_id, user_id="lin")
    got = {m.content for m in memory.list(user_id="lin")}
    for expected in ("用户叫林晓", "用户对花生过敏", "The user prefers pytest over unittest.",
                     "The user does not eat spicy food."):
        assert expected in got
    assert any("白茶" in c for c in got) and any("Priya" in c for c in got) and any("产品评审" in c for c in got)
    assert len(got) >= 10
    pinned = [m for m in memory.list(user_id="lin") if m.pinned]
    assert [m.source for m in pinned] == ["user"]  # "Remember that my manager's name is Priya…"
