"""Seed 002 §3–4 topic detection with an LLM (issue 30 row 5): the compiler, an LLM, judges each
user turn (continue / done / switch) and names the task the scratchpad holds; a dead, slow or
confused LLM leaves the turn to the offline rules. Driven end to end through
`Memory.add_messages` under the progressive profile: with `ScriptedLLM`, and through the
engine's own HTTP client against an OpenAI-compatible stub on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from memlane import Memory
from memlane.errors import BackendError, ExtractionError
from memlane.llm.prompts.topic import TopicAnswer, topic_prompt
from memlane.testing import ManualClock, ScriptedLLM
from tests.conftest import T0
from tests.stubs import openai_stub

MakeMemory = Callable[..., Memory]

# (role, text): a task, a follow-up in new words, a new task of the same kind, the task finished
TALK_ZH = [("user", "帮我做一个季度项目汇报的PPT"), ("assistant", "好的，你想要几页？"),
           ("user", "每页的字数控制在多少比较合适"), ("assistant", "每页不超过五十字。"),
           ("user", "再帮我做一个PPT，给新员工培训用的"), ("assistant", "好的，先列大纲。"),
           ("user", "好了，就这样")]


def _say(memory: Memory, talk: list[tuple[str, str]], session: str = "s") -> list[str]:
    """Each turn added on its own; the focus after each user turn."""
    focus = []
    for role, text in talk:
        memory.add_messages(session, [{"role": role, "content": text}], user_id="u")
        if role == "user":
            focus.append(memory.scratchpad(user_id="u").current_focus)
    return focus


def _scripted(make_memory: MakeMemory, *replies: Any, **kw: Any) -> Memory:
    """A progressive memory whose LLM answers only the topic calls (the in-session extraction,
    also the LLM's under this profile, is tested through HTTP below and in test_distill)."""
    memory = make_memory("progressive", extraction={"every_n_user_messages": 0}, **kw)
    memory.llm = ScriptedLLM(*replies)
    return memory


def _offline(make_memory: MakeMemory, tmp_path: Any, talk: list[tuple[str, str]]) -> list[str]:
    return _say(make_memory("progressive", home=tmp_path / "offline"), talk)


def test_the_llm_judges_each_user_turn_and_names_the_task(make_memory: MakeMemory) -> None:
    memory = _scripted(
        make_memory,
        {"move": "switch", "task": "季度项目汇报PPT"},
        '{"move": "continue", "task": "季度项目汇报PPT"}',
        "<think>新员工培训是另一份PPT</think>\n[SWITCH] 新员工培训PPT",  # seed 003's bracket form, read alike
        "```json\n{\"move\": \"done\", \"task\": \"\"}\n```",
        clock=ManualClock(T0),
    )
    assert _say(memory, TALK_ZH) == ["季度项目汇报PPT", "季度项目汇报PPT", "新员工培训PPT", ""]
    pad = memory.scratchpad(user_id="u")
    assert [t["task"] for t in pad.recent_tasks] == ["季度项目汇报PPT", "新员工培训PPT"]
    # one call per user turn, none for the assistant's; each shows the task, the turns and the message
    calls = memory.llm.calls
    assert len(calls) == 4 and all(c["json_schema"]["title"] == "TopicAnswer" for c in calls)
    asked = calls[1]["messages"][1]["content"]
    assert "当前任务：季度项目汇报PPT" in asked and "助手: 好的，你想要几页？" in asked
    assert asked.endswith("每页的字数控制在多少比较合适")
    assert "当前任务：（无）" in calls[0]["messages"][1]["content"]


def test_small_talk_sets_no_task_and_a_continue_keeps_the_tasks_name(make_memory: MakeMemory) -> None:
    memory = _scripted(make_memory, {"move": "continue", "task": ""},
                       {"move": "switch", "task": "Email to Dana about the delayed shipment"},
                       {"move": "continue", "task": "a formal email to Dana"})  # a rename is not a switch
    talk = [("user", "hi there, how are you doing today my friend"),
            ("user", "Write an email to my client Dana about the delayed shipment"),
            ("user", "make it more formal")]
    assert _say(memory, talk) == ["", "Email to Dana about the delayed shipment",
                                  "Email to Dana about the delayed shipment"]
    assert memory.scratchpad(user_id="u").recent_tasks == []


@pytest.mark.parametrize("failure", [
    BackendError("LLM down"),
    "Sure! Happy to help with that.",  # prose, no verdict
    '{"move": "maybe", "task": "x"}',  # JSON of another shape
    RuntimeError("a provider plugin's own bug"),
])
def test_a_failed_verdict_leaves_the_turn_to_the_rules(make_memory: MakeMemory, tmp_path: Any,
                                                       failure: Any) -> None:
    memory = _scripted(make_memory, *[failure] * 4)
    stored = [memory.add_messages("s", [{"role": role, "content": text}], user_id="u") for role, text in TALK_ZH]
    assert [t[0].content for t in stored] == [text for _, text in TALK_ZH]  # every turn kept
    assert len(memory.llm.calls) == 4  # each user turn was put to the LLM
    offline = make_memory("progressive", home=tmp_path / "offline")
    _say(offline, TALK_ZH)
    got, want = memory.scratchpad(user_id="u"), offline.scratchpad(user_id="u")
    assert got.current_focus == want.current_focus == ""
    assert [t["task"] for t in got.recent_tasks] == [t["task"] for t in want.recent_tasks]


def test_one_call_puts_at_most_its_last_turns_to_the_llm(make_memory: MakeMemory) -> None:
    memory = _scripted(make_memory, {"move": "continue", "task": "Slides for the thesis defense"},
                       {"move": "switch", "task": "Stretches for back pain"}, session={"topic_llm_max_turns": 2})
    said = ["Can you help me make slides for my thesis defense?", "the first slide should show the title",
            "make the fonts bigger", "by the way, do you know a good stretch routine for back pain?"]
    memory.add_messages("s", [{"role": "user", "content": t} for t in said], user_id="u")
    assert len(memory.llm.calls) == 2
    assert memory.llm.calls[0]["messages"][1]["content"].endswith("make the fonts bigger")
    pad = memory.scratchpad(user_id="u")
    # the rules named the first task from its turn; the LLM the second
    assert pad.current_focus == "Stretches for back pain"
    assert [t["task"] for t in pad.recent_tasks] == [said[0]]


def test_the_prompt_is_bounded_in_tokens(make_memory: MakeMemory) -> None:
    memory = _scripted(make_memory, {"move": "switch", "task": "Review the log"}, {"move": "continue", "task": ""},
                       session={"topic_llm_context_tokens": 200})
    memory.add_messages("s", [{"role": "user", "content": "Please review this server log for errors"}], user_id="u")
    memory.add_messages("s", [{"role": "assistant", "content": "line of the log " * 4000}], user_id="u")
    memory.add_messages("s", [{"role": "user", "content": "what does the last error mean? " * 400}], user_id="u")
    last = memory.llm.calls[-1]
    # the system prompt (~300), the recent turns (200), the message (its first 2,000 characters)
    assert last["prompt_tokens"] < 300 + 200 + 2000 // 4 + 100
    assert memory.scratchpad(user_id="u").current_focus == "Review the log"


# ---- through the engine's HTTP client ---------------------------------------------------------


def _completion(text: str) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def _message(body: dict[str, Any]) -> str:
    return str(body["messages"][1]["content"]).rsplit("\n", 1)[-1]


VERDICTS = {  # the stub's answers, by the user's new message
    "Write an email to my client saying the delivery will be a week late":
        {"move": "switch", "task": "Email to the client about the late delivery"},
    "the tone should be warmer": {"move": "continue", "task": "Email to the client about the late delivery"},
    "Now write a different email to my landlord about the heating":
        {"move": "switch", "task": "Email to the landlord about the heating"},
    "perfect, that's all": {"move": "done", "task": ""},
}


def _stub(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    if '"operations"' in str(body["messages"][0]["content"]):  # the in-session extraction
        return 200, _completion('{"operations": []}')
    return 200, _completion(json.dumps(VERDICTS[_message(body)]))


def _http_memory(make_memory: MakeMemory, url: str, home: Any = None, **session: Any) -> Memory:
    return make_memory("progressive", home=home, llm={"base_url": url, "model": "stub-model", "max_retries": 0},
                       session=session)


def test_the_progressive_profile_asks_the_llm_over_http(make_memory: MakeMemory) -> None:
    talk = [("user", text) for text in VERDICTS]
    with openai_stub(_stub) as (url, seen):
        memory = _http_memory(make_memory, url)
        focus = _say(memory, talk)
    assert focus == ["Email to the client about the late delivery", "Email to the client about the late delivery",
                     "Email to the landlord about the heating", ""]
    assert [t["task"] for t in memory.scratchpad(user_id="u").recent_tasks] == [
        "Email to the client about the late delivery", "Email to the landlord about the heating"]
    topic_calls = [b for _, b in seen if '"move"' in str(b["messages"][0]["content"])]
    assert [_message(b) for b in topic_calls] == list(VERDICTS)
    assert {b["model"] for b in topic_calls} == {"stub-model"}
    assert topic_calls[0]["response_format"]["json_schema"]["schema"]["title"] == "TopicAnswer"


def test_a_dead_llm_server_leaves_the_turns_to_the_rules(make_memory: MakeMemory, tmp_path: Any) -> None:
    offline = _offline(make_memory, tmp_path, TALK_ZH)
    with openai_stub(lambda path, body: (500, {"error": {"message": "overloaded"}})) as (url, seen):
        failing = _http_memory(make_memory, url)
        assert _say(failing, TALK_ZH) == offline
    assert len(seen) == 4  # each user turn was put to it (no retries: llm.max_retries = 0)
    refused = _http_memory(make_memory, "http://127.0.0.1:9/v1", home=tmp_path / "refused")  # nothing listens
    assert _say(refused, TALK_ZH) == offline


def test_a_slow_llm_is_not_waited_for(make_memory: MakeMemory, tmp_path: Any) -> None:
    release = threading.Event()
    movie = "对了，周末有什么好看的电影"

    def slow(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if '"operations"' in str(body["messages"][0]["content"]):
            return 200, _completion('{"operations": []}')
        if _message(body) == movie:
            return 200, _completion('{"move": "switch", "task": "周末看电影"}')
        release.wait(10)
        return 200, _completion('{"move": "switch", "task": "too late"}')

    def asked() -> list[str]:
        return [_message(b) for _, b in seen if '"move"' in str(b["messages"][0]["content"])]

    with openai_stub(slow) as (url, seen):
        memory = _http_memory(make_memory, url, topic_llm_timeout_s=0.3)
        started = time.monotonic()
        focus = _say(memory, TALK_ZH)
        # the first turn waited 0.3 s; the next ones, while that call still ran, did not ask
        assert asked() == [TALK_ZH[0][1]] and time.monotonic() - started < 3
        release.set()
        for late in [t for t in threading.enumerate() if t.name == "memlane-topic"]:
            late.join(5)
        memory.add_messages("s", [{"role": "user", "content": movie}], user_id="u")
        assert asked() == [TALK_ZH[0][1], movie]  # once it ended, the LLM is asked again
    assert focus == _offline(make_memory, tmp_path, TALK_ZH)  # the late answer was never used
    assert memory.scratchpad(user_id="u").current_focus == "周末看电影"


# ---- the answer, read tolerantly --------------------------------------------------------------


@pytest.mark.parametrize(("reply", "move", "task"), [
    ('{"move": "switch", "task": "写给房东的邮件"}', "switch", "写给房东的邮件"),
    ('Sure.\n```json\n{"move": "CONTINUE", "task": null}\n```', "continue", ""),
    ('<think>it is new</think>{"move": "new task", "task": "  Porto   weekend "}', "switch", "Porto weekend"),
    ("[SWITCH:写给房东的邮件]", "switch", "写给房东的邮件"),
    ("The user moves on.\n- [SWITCH] 「写给房东的邮件」", "switch", "写给房东的邮件"),
    ("[CONTINUE]\n", "continue", ""),
    ("I think it is finished.\n[DONE]", "done", ""),
    ('{"move": "finished"}', "done", ""),
])
def test_the_answer_is_read_as_json_or_bracket_lines(reply: str, move: str, task: str) -> None:
    prompt = topic_prompt("", [], "hi", language="en", task_chars=40)
    assert prompt.parse(reply) == TopicAnswer(move=move, task=task)  # type: ignore[arg-type]


@pytest.mark.parametrize("reply", ["", "Sure, sounds good.", '{"move": "perhaps"}', '{"task": "x"}'])
def test_an_unreadable_answer_is_an_extraction_error(reply: str) -> None:
    with pytest.raises(ExtractionError):
        topic_prompt("", [], "hi", language="zh", task_chars=40).parse(reply)
