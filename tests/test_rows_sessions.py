"""Issue 13, "Rows that stop short": the short-term rows of seeds 000, 002, 003 and 004, each
taken from its seed's words and run under every profile (the others must not change)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memlane import Memory
from memlane.llm import ChatMessage
from memlane.llm.prompts.summary import COMPACTION
from memlane.testing import ManualClock

from .conftest import PROFILE_NAMES

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def chat(n: int, text: str = "message {i} about topic{i:04d}", start: datetime = T0) -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": text.format(i=i),
             "created_at": (start + timedelta(minutes=i)).isoformat()} for i in range(n)]


def episode_memories(memory: Memory) -> list[str]:
    if "episode" not in memory.config.policy.categories:
        return []
    return [m.content for m in memory.list(user_id="u", category="episode")]


# ---- seed 003: working memory of 30 messages; past 30, the summary is an episode ----------------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_seed003_working_memory_holds_30_and_its_summary_becomes_an_episode(make_memory, profile):
    """Seed 003: "工作记忆 conversation_history (30条/15轮)" … "超过 30 条时摘要" → 情境记忆
    (category="episode", "[2026-01-03 18:00] 聊了面试、游戏"), before the session ends."""
    memory = make_memory(profile)
    memory.add_messages("s", chat(30), user_id="u")
    window = memory.build_context("s", user_id="u").history
    expected = {"companion": 30, "consolidator": 30}.get(profile, 20)  # seed 000's 5–20 elsewhere
    assert len(window) == expected and window[-1].content == "message 29 about topic0029"

    for i in range(30, 40):  # one message at a time, as a chat goes
        memory.add_messages("s", chat(40)[i:i + 1], user_id="u")
    episodes = episode_memories(memory)
    if profile == "companion":
        (episode,) = episodes  # 40 messages, the session still open: one episode, not 0
        assert episode.startswith("[2026-03-01 09:00] ") and "topic0000" in episode
        shown = memory.build_context("s", user_id="u").history
        assert len(shown) <= 30 and shown[-1].content == "message 39 about topic0039"
    else:
        assert episodes == []
    memory.end_session("s", user_id="u")
    if profile == "companion":  # the session's episode replaces the running one: still one
        assert len(episode_memories(memory)) == 1


class GatedLLM:
    """An LLM that answers only once the test opens the gate: a caller that waited on it
    would hang. Compaction gets a summary, extraction an empty list of operations."""

    model_id = "gated"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls = 0

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: dict[str, Any] | None = None) -> str:
        self.calls += 1
        assert self.gate.wait(30)
        if str(messages[0].get("content")) in COMPACTION.values():
            return "聊了面试、游戏"
        return json.dumps({"operations": []})


def test_seed003_with_an_llm_the_episode_is_written_behind_the_chat(make_memory):
    memory = make_memory("companion", extraction={"wait_for_llm": False})
    llm = GatedLLM()
    memory.llm = llm
    started = time.monotonic()
    for i in range(0, 40, 2):
        memory.add_messages("s", chat(40, "今天聊了面试和游戏，第{i}条")[i:i + 2], user_id="u")
    assert time.monotonic() - started < 20  # never waited on the closed gate
    assert episode_memories(memory) == []  # the summary is the LLM's, still to come
    llm.gate.set()
    assert memory.worker.wait_idle(60)
    (episode,) = episode_memories(memory)
    assert episode == "[2026-03-01 09:00] 聊了面试、游戏"


# ---- seed 004: the short-term share of the model's window -------------------------------------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_seed004_window_fills_the_short_term_budget(make_memory, profile):
    """Seed 004 §4.1 "按 token 预算获取上下文（从最近往前取）" with §4.3's split: gpt-4o's
    128,000 tokens → 50 % short-term (51,200 for messages, the rest for the summary)."""
    memory = make_memory(profile)
    line = "We compared the deployment logs of service {i:03d} line by line and found nothing new. "
    memory.add_messages("s", chat(190, line * 5), user_id="u")  # ~120 tokens each, under the cap of 200
    ctx = memory.build_context("s", user_id="u", model="gpt-4o")
    assert ctx.budgets.history == 51_200
    uncompacted = 190 - memory.get_session("s", user_id="u").metadata.get("compacted_through", 0)
    if profile == "consolidator":
        assert len(ctx.history) == 190  # every message fits: no count cap
    elif profile == "companion":
        assert len(ctx.history) == uncompacted <= 30  # seed 003: the working memory past its summary
    else:
        assert len(ctx.history) == 20  # seed 000's 5–20 messages
    fixed = memory.build_context("s", user_id="u")  # no model: seed 000's 4096 tokens
    used = sum(m.tokens for m in fixed.history)
    assert fixed.block("history").tokens <= 4096
    if profile == "consolidator":  # newest backwards until the next would not fit
        assert len(fixed.history) > 20 and used + fixed.history[0].tokens > 4096 - 10
    else:
        assert len(fixed.history) == min(20 if profile != "companion" else 30, uncompacted)


# ---- seed 000: the Supervisor's file retrieval and a history.json kept every turn -------------

JAN31 = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_seed000_build_context_injects_from_the_files(make_memory, profile):
    """Seed 000 "检索与注入": keywords from the input and the last 5 messages, BM25 over
    memory.md, memory/ (≤ 5 days raw) and memory/summary/; "## Memory" with `[source]` tags;
    "无命中时不注入"."""
    clock = ManualClock(datetime(2026, 1, 28, 10, 0, tzinfo=UTC))
    memory = make_memory(profile, clock=clock)
    memory.add("用户偏好使用 pnpm 而非 npm", user_id="u", importance="low")  # 0.4: not a core memory
    memory.add_messages("old", [{"role": "user", "content": "上次部署使用了 Cloudflare Workers，遇到了超时问题"}],
                        user_id="u")
    clock.now = JAN31
    memory.archive(user_id="u", force=True)  # → memory/2026-01-28-….md
    memory.add_messages("s", [{"role": "user", "content": "今天继续看部署的事"}], user_id="u")
    ctx = memory.build_context("s", "部署用 pnpm 吗", user_id="u")
    text = ctx.block("memories").text
    if profile == "file-archive":
        lines = text.split("\n")
        assert lines[0] == "## Memory"
        assert "[MEMORY.md] 用户偏好使用 pnpm 而非 npm" in lines
        assert any(ln.startswith("[memory/2026-01-28-") and "Cloudflare Workers" in ln for ln in lines)
        assert [h.content for h in ctx.memories if h.corpus == "memories"] == ["用户偏好使用 pnpm 而非 npm"]
    else:  # the store's hybrid search (or, under progressive, the tools): no file is read
        assert "[memory/" not in text
    # 无命中时不注入 (a fresh session: seed 000 also takes keywords from the last 5 messages)
    memory.add_messages("t", [{"role": "user", "content": "hello there"}], user_id="u")
    assert memory.build_context("t", "xylophone quantum chromodynamics", user_id="u").block("memories").text == ""


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_seed000_history_json_is_kept_every_turn(make_memory, profile):
    """Seed 000: history.json, "Supervisor 每轮检查" — each turn is in the file when it is
    stored, not only after an archive run."""
    clock = ManualClock(JAN31)
    memory = make_memory(profile, clock=clock)
    path = memory.data_dir(user_id="u") / "history.json"
    for i in range(3):
        memory.add_messages("s", [{"role": "user", "content": f"第 {i} 条消息"}], user_id="u")
        if profile == "file-archive":
            texts = [m["text"] for m in json.loads(path.read_text(encoding="utf-8"))]
            assert texts == [f"第 {j} 条消息" for j in range(i + 1)]
            assert all(m["archived"] is False for m in json.loads(path.read_text(encoding="utf-8")))
        else:
            assert not path.exists()
    if profile == "file-archive":  # six hours on, the next turn's check archives (seed 000's trigger)
        clock.now += timedelta(hours=6)
        memory.add_messages("s", [{"role": "user", "content": "六小时后"}], user_id="u")
        assert [m["archived"] for m in json.loads(path.read_text(encoding="utf-8"))] == [True] * 4


def test_seed000_history_json_survives_concurrent_writers(make_memory):
    """Two threads adding turns while an archive run rewrites the file: none goes missing."""
    memory = make_memory("file-archive")
    errors: list[BaseException] = []

    def writer(session: str) -> None:
        try:
            for i in range(15):
                memory.add_messages(session, [{"role": "user", "content": f"{session} message {i}"}], user_id="u")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in ("a", "b")]
    for t in threads:
        t.start()
    for _ in range(5):
        memory.archive(user_id="u", force=True)
    for t in threads:
        t.join()
    assert not errors
    texts = {m["text"] for m in json.loads((memory.data_dir(user_id="u") / "history.json").read_text("utf-8"))}
    assert texts == {f"{s} message {i}" for s in ("a", "b") for i in range(15)}


# ---- seed 002: the scratchpad follows the conversation's topic --------------------------------

TOPICS = {
    "zh": ["帮我规划一下去杭州的三日游行程，预算五千元",
           "好的！第一天游览西湖和断桥，第二天去灵隐寺和龙井村喝茶，第三天逛河坊街。住西湖附近的酒店，每晚约五百元。",
           "杭州三日游第二天去西湖还是灵隐寺比较好？",
           "那第二天呢？",
           "我的Python脚本报错 ModuleNotFoundError: No module named requests，怎么解决？"],
    "en": ["Help me plan a three-day trip to Hangzhou on a budget of 5000 yuan",
           "Sure! Day one: West Lake and the Broken Bridge. Day two: Lingyin Temple and tea in Longjing "
           "village. Day three: Hefang Street. Stay near West Lake, about 500 yuan a night.",
           "For the Hangzhou trip, should day two be West Lake or Lingyin Temple?",
           "what about the hotel there?",
           "My Python script fails with ModuleNotFoundError: No module named requests, how do I fix it?"],
}


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_seed002_a_topic_switch_archives_the_old_task(make_memory, profile, language):
    """Seed 002 §4 Scratchpad: "当前任务 … 每轮同步更新"; "近期完成: 话题切换时自动归档旧任务
    （带时间戳，最多 5 条）" — without the caller reporting anything."""
    clock = ManualClock(T0)
    memory = make_memory(profile, clock=clock)
    trip, reply, follow_up, short, other = TOPICS[language]

    def say(role: str, text: str) -> None:
        clock.advance(minutes=1)
        memory.add_messages("s", [{"role": role, "content": text}], user_id="u")

    say("user", trip)
    say("assistant", reply)
    say("user", follow_up)  # the same trip: shares most of its words with the topic
    say("user", short)  # too few words to tell: the topic goes on
    pad = memory.scratchpad(user_id="u")
    if profile != "progressive":  # elsewhere the scratchpad is the caller's alone
        assert pad.current_focus == "" and pad.recent_tasks == []
        say("user", other)
        assert memory.scratchpad(user_id="u").current_focus == ""
        return
    assert pad.current_focus == trip and pad.recent_tasks == []
    say("user", other)  # a different topic: the trip is archived, with its time
    pad = memory.scratchpad(user_id="u")
    assert pad.current_focus == other
    assert [t["task"] for t in pad.recent_tasks] == [trip]
    assert pad.recent_tasks[0]["done_at"] == clock.now.isoformat()
    rendered = memory.build_context("s", user_id="u").block("scratchpad").text
    assert trip in rendered and other in rendered


def test_seed002_at_most_five_finished_tasks_and_the_caller_still_wins(make_memory):
    memory = make_memory("progressive")
    topics = ["PostgreSQL index tuning for the orders table", "Kubernetes ingress certificate renewal failing",
              "Quarterly marketing budget spreadsheet formulas", "Birthday party catering menu for twenty guests",
              "Translate the product manual into Japanese", "Replace the bathroom faucet cartridge myself",
              "Learn the basics of watercolor landscape painting"]
    for i, topic in enumerate(topics):
        memory.add_messages("s", [{"role": "user", "content": f"Please help with {topic}"}], user_id="u")
        memory.add_messages("s", [{"role": "assistant", "content": f"Step {i}: looking into {topic}."}], user_id="u")
    pad = memory.scratchpad(user_id="u")
    assert pad.current_focus.endswith(topics[-1])
    assert [t["task"].removeprefix("Please help with ") for t in pad.recent_tasks] == topics[1:6]
    memory.update_scratchpad(user_id="u", focus="Write the release notes")  # the caller reports its own task
    assert memory.scratchpad(user_id="u").current_focus == "Write the release notes"


@pytest.mark.parametrize(("task", "said", "after"), [
    # (the task, what the user says next with the assistant's reply between, the focus after each)
    ("帮我做一个季度项目汇报的PPT", ["第一页放项目背景和目标", "用蓝色调，字体大一点", "对了，周末有什么好看的电影推荐吗",
                                 "好了，就这样吧"], ["task", "task", "new", ""]),
    ("Write an email to my client Dana about the delayed shipment", ["make it more formal",
     "mention the new delivery date, March 14th, and offer a discount", "By the way, how do I reverse a list in Python?",
     "that's all, thanks"], ["task", "task", "new", ""]),
])
def test_seed002_follow_ups_keep_the_task_and_a_change_of_subject_archives_it(make_memory, task, said, after):
    """Issue 30: a follow-up that shares no word with the task ("第一页放项目背景和目标") or
    answers the assistant's question keeps it current; a change of subject ("对了，…", "by the
    way") archives it; "好了，就这样" / "that's all" finishes it. Labelled set: bench/topics.py."""
    memory = make_memory("progressive")
    memory.add_messages("s", [{"role": "user", "content": task}, {"role": "assistant", "content": "OK, what else?"}],
                        user_id="u")
    focus = task
    for text, want in zip(said, after, strict=True):
        memory.add_messages("s", [{"role": "user", "content": text}, {"role": "assistant", "content": "Done."}],
                            user_id="u")
        pad = memory.scratchpad(user_id="u")
        expected = {"task": focus, "new": text, "": ""}[want]
        assert pad.current_focus == expected, (text, pad.current_focus)
        focus = pad.current_focus or focus
    assert [t["task"] for t in memory.scratchpad(user_id="u").recent_tasks] == [task, said[2]]
