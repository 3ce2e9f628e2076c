"""The context builder: blocks, budgets, languages, profiles (issue 5; seeds 000, 001 §4.1, 002, 004 §4.3)."""

from __future__ import annotations

import json
import subprocess
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane import Memory
from memlane.context import BLOCK_ORDER, Budgets, context_window, fit, pack
from memlane.errors import NotFound
from memlane.models import Hit, Turn
from memlane.sessions import dedup, select_window
from memlane.text import TRUNCATED, estimate_tokens

from .cli_support import run_cli
from .conftest import make_config
from .test_sessions import turn

ZH = "我们今天去杭州西湖边吃饭散步拍照然后回家写代码测试数据库"
EN = "the quick brown fox jumps over lazy dogs while we debug sqlite indexes "
MIX = ZH + EN


def texts() -> st.SearchStrategy[str]:
    """Message text of any length in Chinese, English or both; never blank."""
    return st.builds(
        lambda alphabet, n, offset: "a" + (alphabet * (n // len(alphabet) + 2))[offset:offset + n],
        st.sampled_from([ZH, EN, MIX]), st.integers(0, 2500), st.integers(0, 40),
    )


# ---- the property: every block within its budget, history ≥ 5 when ≥ 5 exist ----------------


@settings(max_examples=200, deadline=None)
@given(
    contents=st.lists(st.tuples(st.sampled_from(["user", "assistant"]), texts()), min_size=0, max_size=40),
    budget=st.integers(300, 6000),
)
def test_window_property(contents, budget):
    turns = [turn(i, role, text) for i, (role, text) in enumerate(contents, 1)]
    window = select_window(turns, max_tokens=budget)
    assert sum(m.tokens for m in window) <= budget
    assert len(window) <= 20
    assert len(window) >= min(5, len(turns))
    assert all(len(m.content) <= 501 for m in window)
    assert [m.turn.seq for m in window] == sorted(m.turn.seq for m in window)  # oldest first
    if turns:
        assert window[-1].turn.seq == len(turns)  # the newest is always there


@pytest.fixture(scope="module")
def shared_memory(tmp_path_factory: pytest.TempPathFactory):
    from memlane.testing import HashEmbedder

    mem = Memory(make_config(tmp_path_factory.mktemp("ctx"), session={"compaction_cap": 12}), embedder=HashEmbedder())
    yield mem
    mem.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    contents=st.lists(st.tuples(st.sampled_from(["user", "assistant"]), texts()), min_size=1, max_size=30),
    memories=st.lists(st.tuples(texts(), st.floats(0.0, 1.0), st.booleans()), max_size=12),
    query=st.one_of(st.none(), texts()),
    model=st.sampled_from([None, "default", "gpt-4o", "deepseek-chat", "some-unknown-model"]),
    sizes=st.tuples(st.integers(300, 5000), st.integers(40, 2048), st.integers(60, 2000), st.integers(0, 1024)),
)
def test_every_block_stays_within_its_budget(shared_memory: Memory, contents, memories, query, model, sizes):
    memory = shared_memory
    cfg = memory.config.context
    cfg.history_tokens, cfg.memory_tokens, cfg.system_tokens, cfg.summary_tokens = sizes
    user = uuid.uuid4().hex
    for content, score, pinned in memories:
        memory.add(content[:2000], user_id=user, importance=score, pinned=pinned)
    for i in range(0, len(contents), 7):  # in batches, so compaction (cap 12) runs in between
        memory.add_messages("s", [{"role": r, "content": c} for r, c in contents[i:i + 7]], user_id=user)
    ctx = memory.build_context("s", query, user_id=user, model=model)
    assert [b.name for b in ctx.blocks] == list(BLOCK_ORDER)
    for block in ctx.blocks:
        assert block.tokens <= block.budget, (block.name, block.tokens, block.budget)
    system = sum(ctx.block(n).tokens for n in ("tools", "scratchpad", "core"))
    assert system <= ctx.budgets.system
    stored = dedup(memory.get_turns("s", user_id=user))  # seed 000: same time + text counts once
    assert len(ctx.history) >= min(5, len(stored))
    assert len(ctx.history) <= 20
    assert len(ctx.memories) <= 5
    if ctx.budgets.window is not None:
        used = ctx.budgets.system + ctx.budgets.memories + ctx.budgets.summary + ctx.budgets.history
        assert used + ctx.budgets.reserve <= ctx.budgets.window


# ---- blocks ------------------------------------------------------------------------------------


def test_blocks_in_order_with_chinese_headings(memory: Memory):
    memory.add("用户对花生过敏", user_id="lin", importance="high")
    memory.update_scratchpad(user_id="lin", focus="规划周末的杭州行程")
    memory.add_messages("s1", [{"role": "user", "content": "周末去杭州玩，帮我安排一下"},
                               {"role": "assistant", "content": "好的，先订酒店。"}], user_id="lin")
    ctx = memory.build_context("s1", "晚饭吃什么", user_id="lin")
    prompt = ctx.system_prompt
    assert ctx.language == "zh"
    order = ["# 记忆系统", "## 当前任务", "# 历史记忆", "## 最近对话"]
    assert [prompt.index(h) for h in order] == sorted(prompt.index(h) for h in order)
    assert "- 用户对花生过敏" in ctx.block("core").text
    assert "search_memory" in ctx.block("tools").text and "search_conversation_traces" in ctx.block("tools").text
    assert ctx.block("history").text.endswith("[assistant] 好的，先订酒店。")
    assert ctx.messages()[0]["role"] == "system" and "## 最近对话" not in ctx.messages()[0]["content"]
    assert ctx.messages()[1:] == [{"role": "user", "content": "周末去杭州玩，帮我安排一下"},
                                  {"role": "assistant", "content": "好的，先订酒店。"}]


def test_english_user_gets_memory_heading(memory: Memory):
    memory.add("The user prefers pnpm over npm", user_id="ann", importance="high")
    ctx = memory.build_context(None, "which package manager?", user_id="ann")
    assert ctx.language == "en"
    assert ctx.block("core").text.startswith("# Memory\n")


def test_core_memories_pinned_and_top_twenty_above_half(memory: Memory):
    now = datetime.now(UTC)
    for i in range(25):
        memory.add(f"fact number {i}", user_id="u", importance=0.5 + i / 100)
    memory.add("low but pinned core fact", user_id="u", importance=0.1, pinned=True)
    memory.add("below the threshold", user_id="u", importance=0.49)
    memory.add("expired high memory", user_id="u", importance=0.99, expires_at=now - timedelta(days=1))
    ctx = memory.build_context(None, user_id="u")
    lines = ctx.block("core").text.splitlines()[3:]
    assert len(lines) == 20
    assert lines[0] == "- low but pinned core fact"
    assert lines[1:] == [f"- fact number {i}" for i in range(24, 5, -1)]
    assert ctx.block("memories").text == ""  # no query, no relevant block


def test_relevant_memories_are_tagged_cut_and_at_most_five(memory: Memory):
    long = "关于部署的经验：" + "上次部署用了 Cloudflare Workers，遇到了超时问题。" * 20
    ids = [memory.add(long + str(i), user_id="u", importance="low").id for i in range(8)]
    ctx = memory.build_context(None, "部署 超时", user_id="u")
    block = ctx.block("memories")
    lines = block.text.splitlines()
    assert lines[0] == "## 相关记忆"
    assert 1 <= len(lines) - 1 <= 5 and len(ctx.memories) == len(lines) - 1
    for line in lines[1:]:
        tag = line.split("]")[0] + "] "
        assert tag.startswith("[memory:") and tag[len("[memory:"):-2] in ids
        assert line.endswith(TRUNCATED) and len(line) <= len(tag) + 300 + len(TRUNCATED)
    assert block.tokens <= 2048


def test_injected_memories_are_not_counted_as_used(make_memory, tmp_path: Path):
    # issue 13: being shown is not being used (seed 003); a search the agent runs is
    for profile in ("default", "file-archive"):
        memory = make_memory(profile, home=tmp_path / profile)
        rec = memory.add("the user keeps bees in the garden", user_id="u", importance="low")
        assert [h.id for h in memory.build_context(None, "bees", user_id="u").memories] == [rec.id]
        assert memory.get(rec.id, user_id="u").activation_count == 0, profile
        memory.tools(user_id="u").call("search_memory", {"query": "bees"})
        used = 0 if profile == "file-archive" else 1  # seed 000 never counts hits
        assert memory.get(rec.id, user_id="u").activation_count == used, profile


def test_progressive_profile_injects_no_memories_and_says_so(make_memory):
    memory = make_memory("progressive")
    memory.add("the user keeps bees in the garden", user_id="u", importance="low")
    ctx = memory.build_context(None, "bees", user_id="u")
    assert ctx.block("memories").text == "" and ctx.memories == []
    assert "Nothing is injected automatically" in ctx.block("tools").text


def test_unknown_session_is_an_error(memory: Memory):
    with pytest.raises(NotFound, match="start_session"):
        memory.build_context("nope", user_id="u")


def test_session_summary_block(make_memory):
    memory = make_memory(session={"compaction_cap": 10})
    memory.add_messages("s", [{"role": "user", "content": f"note {i} on the garden beehive"} for i in range(12)],
                        user_id="u")
    ctx = memory.build_context("s", user_id="u")
    assert ctx.block("summary").text.startswith("## Earlier in this conversation\n")


# ---- budgets and packing -------------------------------------------------------------------------


def test_budgets_from_the_model_window(memory: Memory):
    cfg = memory.config.context
    b = Budgets.for_model(cfg, "gpt-4o")
    assert (b.window, b.system, b.memories, b.reserve) == (128_000, 19_200, 19_200, 25_600)
    assert b.summary + b.history == 64_000
    assert context_window(cfg, "gpt-4o-2024-08-06") == 128_000
    assert context_window(cfg, "gpt-4o-mini-2024") == 128_000
    assert context_window(cfg, "my-local-model") == 8192  # seed 004: .get(model, 8192)
    fixed = Budgets.fixed(cfg)
    assert (fixed.history, fixed.memories) == (4096, 2048)  # seed 000


def hit(i: int, content: str) -> Hit:
    return Hit(corpus="memories", id=f"m{i}", content=content, score=1.0, source=f"memory:m{i}")


def test_pack_stops_at_the_budget_and_the_hit_limit():
    hits = [hit(i, "x" * 400) for i in range(10)]
    packed = pack(hits, max_tokens=10_000, max_hits=5, heading="## Memory")
    assert len(packed.hits) == 5 and packed.text.startswith("## Memory\n[memory:m0] ")
    small = pack(hits, max_tokens=200, max_hits=5)
    assert len(small.hits) == 2 and small.tokens <= 200
    assert pack([], 100, 5, heading="## Memory").text == ""
    assert pack(hits, 3, 5, heading="## Memory").text == ""


def test_fit_never_exceeds():
    text = "长" * 1000 + "long " * 100
    for budget in (0, 1, 5, 99, 2000):
        assert estimate_tokens(fit(text, budget)) <= budget


def test_turn_window_keeps_tool_messages_readable():
    t = Turn(id="x", user_id="u", session_id="s", seq=1, role="tool", name="search_memory", content="{}",
             created_at=datetime.now(UTC), token_count=1)
    [m] = select_window([t], max_tokens=100)
    assert m.line() == "[tool:search_memory] {}" and m.chat()["role"] == "user"


# ---- CLI ---------------------------------------------------------------------------------------


def run(home: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    # in this process through the console script's `main` unless `process` (tests/cli_support.py)
    proc = run_cli(args, {"MEMLANE_HOME": str(home), "MEMLANE_EMBEDDER": "hash"}, process=process)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc


def test_cli_context_prints_blocks_with_tokens(tmp_path: Path):
    with Memory(make_config(tmp_path)) as memory:
        memory.add("用户对花生过敏", user_id="lin", importance="high")
        memory.add_messages("s1", [{"role": "user", "content": "晚饭推荐点什么？"}], user_id="lin")
    data = json.loads(run(tmp_path, "context", "--session", "s1", "--query", "晚饭", "--user", "lin",
                          "--model", "gpt-4o", "--json", process=True).stdout)
    assert [b["name"] for b in data["blocks"]] == list(BLOCK_ORDER)
    assert all(b["tokens"] <= b["budget"] for b in data["blocks"])
    assert data["budgets"]["window"] == 128_000 and "# 历史记忆" in data["system_prompt"]
    table = run(tmp_path, "context", "--session", "s1", "--user", "lin").stdout
    assert "history" in table and "tokens" in table and "budget" in table
