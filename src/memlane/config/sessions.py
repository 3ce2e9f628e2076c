"""A conversation: its session (compaction, topics, episodes) and the context built for it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memlane.config.base import _Section


class ContextConfig(_Section):
    history_tokens: int = Field(4096, ge=1)  # seed 000
    history_min_messages: int = Field(5, ge=0)  # seed 000
    history_max_messages: int = Field(20, ge=1)  # seed 000
    message_cut_chars: int = Field(500, ge=1)  # seed 000
    memory_tokens: int = Field(2048, ge=1)  # seed 000
    memory_max_hits: int = Field(5, ge=1)  # seed 000
    snippet_chars: int = Field(300, ge=1)  # seed 000: 300-char cut, "[truncated]"
    core_min_score: float = 0.5  # seed 001 §4.1
    core_top_k: int = Field(20, ge=1)  # seed 001 §4.1
    # seed 001 §4.1's block of the best memories whatever the query; seed 000 injects only what
    # retrieval found ("无命中时不注入"): False under file-archive
    core_memories: bool = True
    # the few lines telling the agent about its memory and its tools; seed 000's agent only
    # reads what is injected and does not query further: False under file-archive
    tool_instructions: bool = True
    auto_inject_memories: bool = True  # seed 002: False, the agent uses the tools
    # where build_context's relevant memories come from: "store" (hybrid search over the
    # memories) or "files", seed 000's keywords + BM25 over MEMORY.md, memory/ and
    # memory/summary/ (`memlane.archive`), as the file-archive profile does
    memory_source: Literal["store", "files"] = "store"
    memory_heading: str = ""  # seed 000: "## Memory"; "" = the localized "## 相关记忆" / "## Relevant memories"
    # without a model: seed 000's fixed budgets above, plus these two for the other blocks
    system_tokens: int = Field(1228, ge=1)  # seed 004 §4.3: 15 % of the 8192-token default window
    summary_tokens: int = Field(1024, ge=0)  # seed 004 §4: the rolling summary; a quarter of seed 000's 4096
    split_summary: float = Field(0.2, ge=0, lt=1)  # share of the short-term budget for the summary (seed 004 §4.1 keeps both in one window)
    # seed 004 §4.3 budget split by model context window
    split_system: float = 0.15
    split_long_term: float = 0.15
    split_short_term: float = 0.50
    split_reserve: float = 0.20
    model_context_windows: dict[str, int] = {
        "default": 8192, "gpt-4o": 128_000, "gpt-4o-mini": 128_000, "gpt-4.1": 1_000_000,
        "deepseek-chat": 64_000, "qwen-plus": 131_072, "qwen-turbo": 1_000_000,
        "llama3.1": 131_072,
    }


class SessionConfig(_Section):
    compaction_cap: int = Field(200, ge=4)  # seed 004 §4: 200 messages; seed 003: 30
    episode_min_messages: int = Field(3, ge=1)  # seed 004 §6.1
    scratchpad_recent: int = Field(5, ge=1)  # seed 002 §4
    summary_max_lines: int = Field(12, ge=1)  # offline extractive summary: lines kept per compaction
    summary_tokens_max: int = Field(2048, ge=64)  # the merged rolling summary keeps its newest lines within this
    episode_memory: bool = False  # seed 003: an episode is also a memory of category "episode", decaying with it
    # Seed 002 §4 "话题切换时自动归档旧任务": a user turn sharing less than this share of its
    # keywords with the current topic (the focus and the turns since it was set) switches the
    # topic: the old focus moves to the finished tasks, the turn becomes the focus. None: the
    # scratchpad changes only when the caller reports it. Not from a seed: 0.2, measured on 14
    # zh + en turns after a trip plan (issue 13): follow-ups share 0.25-1.0, other topics 0.0
    # (one, "推荐个菜谱" after "推荐…酒店", 0.33: missed). Keywords, not embeddings: e5's cosine
    # put a new topic (0.90) above a follow-up (0.87), and over issue 30's five labelled sets its
    # cosine to the task tells switches from follow-ups at chance (AUC 0.31-0.62, `bench/topics.py
    # --similarity`); the hash embedder is word overlap anyway.
    topic_shift_below: float | None = Field(None, ge=0, le=1)
    # not from a seed: a turn with fewer keywords ("那第二天呢？", "what about the hotel?")
    # continues the topic, and this many earlier turns (both roles) make up its vocabulary
    topic_min_keywords: int = Field(3, ge=1)
    topic_context_turns: int = Field(6, ge=0)
    # not from a seed (issue 30, bench/topics.py): a turn closing the task and asking for another
    # ("简历先这样，帮我写封辞职信") may name what it closes in at most this many characters first
    topic_closing_name_chars: int = Field(12, ge=0)
    focus_chars: int = Field(200, ge=16)  # not from a seed: an automatic focus is the turn cut to this
    # Seed 002 §3–4: the current task comes from the compiler, an LLM, every turn ("当前任务: 来自
    # compiler 输出，每轮同步更新"). True: with an LLM configured and topic tracking on (above),
    # the LLM judges each user turn (continue / done / switch) and names the task; the rules
    # decide offline and whenever the LLM fails, times out or answers unreadably. Its own small
    # call: extraction (seed 002 §6) sees ≤5 turns of ≥30 characters a session, in the
    # background, while the task must follow every turn before the next prompt is built.
    topic_llm: bool = False
    # not from a seed: add_messages waits at most this long for the LLM's verdicts on its turns
    # (seed 002's compiler runs before the agent's own request); the rules decide the rest
    topic_llm_timeout_s: float = Field(8.0, gt=0)
    topic_llm_context_tokens: int = Field(600, ge=0)  # not from a seed: recent turns shown with the message
    topic_llm_max_turns: int = Field(4, ge=1)  # not from a seed: the last N user turns of one call go to the LLM
    task_name_chars: int = Field(40, ge=8)  # not from a seed: the LLM names the task in at most this many characters
