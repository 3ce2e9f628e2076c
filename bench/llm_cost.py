"""What extraction costs in LLM calls and tokens for one LoCoMo conversation.

Imports /work/shared/bench/locomo10/26.json (or the file given), ends every session so the
extraction rule runs, and answers every call from a canned, valid reply (3 new memories a
call, so the existing-memories list grows as it would). Tokens are ScriptedLLM's estimates
(one per CJK character, one per ~4 other characters). Other LLM calls (episodes,
compaction) are counted apart.

    .venv/bin/python bench/llm_cost.py [path/to/locomo.json]
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections.abc import Sequence
from itertools import count
from pathlib import Path
from typing import Any

from memlane import Config, Memory
from memlane.importers import read_file
from memlane.llm import ChatMessage
from memlane.testing import HashEmbedder, ScriptedLLM

DEFAULT = Path("/work/shared/bench/locomo10/26.json")
_n = count(1)


def _word(i: int) -> str:
    """A distinct made-up word per number, so canned memories do not deduplicate."""
    return hashlib.sha1(str(i).encode()).hexdigest()[:7]


class CannedLLM(ScriptedLLM):
    """Replies with a valid answer for whichever prompt it gets."""

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: dict[str, Any] | None = None) -> str:
        system = str(messages[0].get("content") or "")
        if '"operations"' in system:
            n = [next(_n) for _ in range(3)]
            self.enqueue(json.dumps({"operations": [
                {"op": "ADD", "content": f"The user mentioned {_word(i)} {_word(i + 7)} about plans with {_word(i + 13)}",
                 "category": "fact", "importance": "medium", "duration": "permanent", "subject": "user",
                 "predicate": "mentioned", "confidence": 0.9} for i in n]}))
        else:
            self.enqueue(json.dumps({"summary": "They talked about plans and news.", "goal": "catch up",
                                     "outcome": "done", "entities": ["friend"], "tools_used": []}))
        return super().complete(messages, json_schema=json_schema)


def main(argv: list[str]) -> None:
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT
    convs = read_file(path, 200_000_000)
    llm = CannedLLM()
    with tempfile.TemporaryDirectory() as home:
        cfg = Config.load(store={"home": home}, embedding={"provider": "hash", "background": False})
        mem = Memory(cfg, embedder=HashEmbedder(), llm=llm)
        user = "locomo"
        mem.import_conversations(convs, user_id=user)
        for c in convs:
            mem.end_session(c.session_id, user_id=c.user_id or user)
        turns = sum(len(c.messages) for c in convs)
        memories = len(mem.list(user_id=convs[0].user_id or user))
        mem.close()
    ext = [c for c in llm.calls if '"operations"' in str(c["messages"][0].get("content"))]
    other = [c for c in llm.calls if c not in ext]

    def tally(calls: list[dict[str, Any]]) -> dict[str, int]:
        p = sum(c["prompt_tokens"] for c in calls)
        o = sum(c["completion_tokens"] for c in calls)
        return {"calls": len(calls), "prompt_tokens": p, "completion_tokens": o, "total_tokens": p + o}

    result = {"file": str(path), "sessions": len(convs), "turns": turns, "memories": memories,
              "extraction": tally(ext), "other_llm_calls": tally(other),
              "max_prompt_tokens_one_call": max((c["prompt_tokens"] for c in ext), default=0)}
    print(json.dumps(result, indent=2))
    out = Path(__file__).parent / "results" / "llm_cost.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv)
