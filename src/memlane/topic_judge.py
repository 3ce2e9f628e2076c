"""Seed 002's compiler on the chat path: the LLM judges each user turn (continue / done /
switch) and names the task, within a time limit; `memlane.topics` falls back to its rules
whenever it gives no verdict."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any, Literal

from memlane.config import SessionConfig
from memlane.errors import BackendError
from memlane.llm import LLM, ChatMessage
from memlane.llm.prompts.topic import topic_prompt
from memlane.models import Turn
from memlane.parts import Parts
from memlane.text import cut, estimate_tokens, language_of

Move = Literal["continue", "switch", "done"]
log = logging.getLogger("memlane.topics")
TOPIC_TEXT_CHARS = 2000  # not from a seed: a turn's first 2000 characters speak for its topic


class Judge:
    """Seed 002's compiler on the chat path: the LLM's verdict on a user turn, within
    `session.topic_llm_timeout_s` for the whole call (the last `topic_llm_max_turns` user turns
    are asked); None whenever the rules must decide instead. It never raises: the turns are
    stored already, and a dead, slow or confused LLM costs the scratchpad its names, not the chat."""

    def __init__(self, llm: LLM, seqs: Sequence[int], cfg: SessionConfig) -> None:
        self.llm, self.cfg = llm, cfg
        self.asked = set(seqs[-cfg.topic_llm_max_turns:])
        self.deadline = time.monotonic() + cfg.topic_llm_timeout_s

    @classmethod
    def of(cls, memory: Parts, seqs: Sequence[int]) -> Judge | None:
        cfg = memory.config.session
        return cls(memory.llm, seqs, cfg) if cfg.topic_llm and memory.llm is not None else None

    def verdict(self, focus: str, recent: Sequence[Turn], turn: Turn) -> tuple[Move, str] | None:
        left = self.deadline - time.monotonic()
        if turn.seq not in self.asked or left <= 0:
            return None
        prompt = topic_prompt(focus, _within(recent, self.cfg.topic_llm_context_tokens),
                              turn.content[:TOPIC_TEXT_CHARS], language=language_of(turn.content),
                              task_chars=self.cfg.task_name_chars)
        try:
            answer = prompt.parse(complete_within(self.llm, prompt.messages, prompt.json_schema, left))
        except Exception as exc:  # any failure of a provider: the rules decide this turn (see above)
            log.warning("topic of turn %d: the LLM gave no verdict (%s: %s); the rules decide",
                        turn.seq, type(exc).__name__, exc)
            return None
        task = cut(answer.task, self.cfg.focus_chars) if answer.task else ""
        if answer.move == "continue" and focus:
            task = focus  # the task goes on under the name it has
        elif answer.move == "switch" and not task:  # a switch the LLM left unnamed: the turn names it
            task = cut(" ".join(turn.content.split()), self.cfg.focus_chars)
        return answer.move, task


def _within(turns: Sequence[Turn], tokens: int) -> list[Turn]:
    """The newest of `turns` that fit in `tokens` (estimated), the oldest of them cut to fit."""
    kept: list[Turn] = []
    for t in reversed(turns):
        if tokens <= 0:
            break
        text = " ".join(t.content.split())
        cost = estimate_tokens(text)
        if cost > tokens:
            text = text[: max(1, len(text) * tokens // cost)] + "…"
        kept.append(t if text == t.content else t.model_copy(update={"content": text}))
        tokens -= cost
    return kept[::-1]


# ids of LLMs whose last topic call outlived its wait and still runs: the next turns go by the
# rules until it ends, so a hung server holds one thread, not one per turn
_late: set[int] = set()
_late_lock = threading.Lock()


def complete_within(llm: LLM, messages: Sequence[ChatMessage], json_schema: dict[str, Any] | None,
                    seconds: float) -> str:
    """`llm.complete`, waited for at most `seconds` (in a thread of its own, left to finish on
    its own deadline); `BackendError` when it is late, or while an earlier late call still runs."""
    key = id(llm)
    with _late_lock:
        if key in _late:
            raise BackendError("an earlier topic call to this LLM is still running")
    box: dict[str, Any] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            box["text"] = llm.complete(messages, json_schema=json_schema)
        except BaseException as exc:  # carried to the caller's thread
            box["error"] = exc
        finally:
            with _late_lock:
                finished.set()
                _late.discard(key)

    threading.Thread(target=run, name="memlane-topic", daemon=True).start()
    if not finished.wait(seconds):
        with _late_lock:
            if not finished.is_set():
                _late.add(key)
                raise BackendError(f"no answer within session.topic_llm_timeout_s ({seconds:.1f} s left)")
    if "error" in box:
        raise box["error"]
    return str(box["text"])
