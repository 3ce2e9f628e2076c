"""How memories are written: the LLM, the extraction that calls it, the policy that scores and ages."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memlane.config.base import _Section


class LLMConfig(_Section):
    # "openai": any OpenAI-compatible server at base_url; or an installed plugin's (plugins.py)
    provider: str = Field("openai", min_length=1, max_length=64)
    base_url: str = ""  # empty: no LLM, the offline heuristics run instead
    model: str = "gpt-4o-mini"
    api_key: str = ""
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(3, ge=0)  # bounded retries on 429 / 5xx
    temperature: float = Field(0.0, ge=0, le=2)
    # not from a seed: the wait before retry n is backoff * 2**n, and a server's Retry-After
    # is honoured up to retry_after_max_s, so a rate limit never stalls a job for minutes
    # (the extraction queue's own back-off, seed 000, handles long outages)
    retry_backoff_s: float = Field(1.0, ge=0)
    retry_after_max_s: float = Field(10.0, ge=0)
    # not from a seed: one call's whole time, retries and waits included (a hung server costs
    # at most this); a refused connection is not retried at all
    deadline_s: float = Field(120.0, gt=0)
    # json_schema → json_object → plain prompt: the first response_format tried; the client
    # steps down when a server rejects it (llama.cpp, older vLLM and Ollama lack json_schema)
    json_mode: Literal["json_schema", "json_object", "none"] = "json_schema"
    max_tokens: int = Field(2048, ge=1)


class DecayRule(_Section):
    """How one category ages. Seed 001: grace 7 d then ×0.99/day; seed 003 per category."""

    grace_days: float = Field(7.0, ge=0)
    daily_factor: float = Field(0.99, gt=0, le=1)
    delete_after_days: float | None = None  # seed 003 episode: 14 d
    delete_below: float | None = None  # seed 003 fact: < 0.3
    never: bool = False  # seed 003 core / system


class PolicyConfig(_Section):
    categories: list[str] = [
        "fact", "preference", "rule", "experience", "workflow", "decision",
        "skill", "todo", "project", "episode", "core",
    ]
    default_category: str = "fact"
    # seed 001 §3.4 initial scores by importance
    importance_high: float = 0.8
    importance_medium: float = 0.6
    importance_low: float = 0.4
    reinforce_rate: float = Field(0.2, ge=0, le=1)  # seed 001 §3.4: s += (1-s)*0.2
    contradiction_penalty: float = Field(0.5, ge=0, le=1)  # seed 001 §6 phase 1.5
    # issue 32: a new fact that replaces an old one (the extractor's `supersedes`, a change
    # cue) closes and keeps the old one ("supersede"); seed 001's rule halves its score instead
    # ("penalise"). A person's explicit change (`Memory.supersede`) supersedes in every profile
    on_change: Literal["supersede", "penalise"] = "supersede"
    # issue 32, the offline extractor's change cues ("moved to", "不再", memlane.changes): the
    # memory a change replaces is looked for among the scope's this-many active memories
    # nearest to it (KNN on the new memory with its cue words removed, and on the memory itself)
    change_candidates: int = Field(20, ge=1, le=1000)
    # …judged first by the words and the slot both share (memlane.changes), then by e5's cosine
    # of the two without subject and cue: a candidate the words find sure is replaced from
    # `unsure` up (flagged below), one they find weak is replaced from `sure` up (flagged
    # between). Per embedder model id; another embedder (the tests' hash one) has no comparable
    # scale, and the words decide alone. Measured with bench/changes_write.py on the odd-numbered
    # conversations of bench/data/changes with multilingual-e5-small-q4: the replaced memories
    # scored 0.83–0.89 (en) and 0.91–0.96 (zh), the other candidates 0.75–0.87 (en) and
    # 0.86–0.94 (zh), so e5 alone cannot tell them apart (and its Chinese scale sits higher);
    # 0.8 keeps every right English pair, 0.9 lifts no wrong one-word match on that half
    change_sure_by_model: dict[str, float] = {"multilingual-e5-small-q4": 0.9}
    change_unsure_by_model: dict[str, float] = {"multilingual-e5-small-q4": 0.8}
    change_max_review: int = Field(3, ge=1, le=50)  # memories one new memory flags at most
    # Not from a seed (issue 32): a change an LLM dates ahead of the conversation ("I move to
    # Shanghai next month") begins on that date, what it replaces holding until then; a date
    # further ahead than this is dropped as a misreading (the change then begins when told)
    change_ahead_days: int = Field(730, ge=0)
    dedup_similarity: float = Field(0.9, ge=0, le=1)  # seed 004 §6
    # Per embedder model id. e5's cosines crowd into [0.8, 1]: unrelated short facts score
    # 0.90–0.94, 白茶 vs 绿茶 0.977, paraphrases 0.98–0.99 (measured, issue 4), so seed 004's
    # 0.9 would merge different facts there.
    dedup_similarity_by_model: dict[str, float] = {"multilingual-e5-small-q4": 0.985}
    archive_below: float = 0.2  # seed 001 §3.4
    delete_below: float = 0.05  # seed 001 §3.4
    demote_below: float | None = None  # seed 002 §7: < 0.3 → TRANSIENT
    decay: dict[str, DecayRule] = {"*": DecayRule()}
    max_memories: int = Field(10_000, ge=1)  # seed 004 §10.1, per scope
    # seed 002 retention priorities, in days (None = permanent)
    retention_days: dict[str, float | None] = {
        "transient": 1, "short_term": 3, "long_term": 30, "permanent": None,
    }
    # seed 002 §4 "默认保留" by type, when the extractor names no duration: a category's
    # duration; "rule:task" for a rule the extractor calls a task rule (the rest are behaviour
    # rules). A todo: 30 days (seed 001 "todo 类过期处理": a todo expires and is then halved
    # and archived; one whose text names its day is kept until that day, extraction.py), as
    # the offline extractor's. Otherwise a memory is permanent unless a duration is given
    default_duration: dict[str, str] = {"todo": "30d"}
    # seed 002 §4: TRANSIENT memories (duration transient / session, or demoted) made in a
    # session are deleted when it ends (`end_session`); elsewhere they live out their 1 day
    transient_ends_with_session: bool = False
    # seed 003 reviewer thresholds mapped onto [0,1] (2.5 and 0.5 on a 0–3 scale)
    promote_at: float = 0.83
    review_below: float = 0.17
    review_search_rounds: int = 3  # seed 003
    boost_amount: float | None = None  # None: BOOST uses reinforce_rate; seed 003: +0.3/3
    # seed 003: a decay review's KEEP resets importance to 0.5, the very value whose crossing
    # triggers the review; None: review_below, that point on memlane's scale (0.5 / 3), as the
    # companion profile has it. 0.5 (kept by the others, where the reviewer is opt-in) lifts a
    # kept memory clear of archive_below instead
    review_keep_score: float | None = Field(0.5, ge=0, le=1)
    # seed 003 "core / importance≥3.0 永不衰减": a score at or above this never decays nor is
    # deleted by policy (3.0 on seed 003's 0–3 scale is 1.0 here); None: no such rule
    never_decay_at: float | None = Field(None, ge=0, le=1)
    verified_never_decays: bool = True  # seed 003: verified=True (the user confirmed it) is kept
    # seed 001 §3.4: "每次 Merge 触发时" every merge (an extraction job applying its operations)
    # first decays the scope's memories to now (`decayed_at` keeps consolidate from decaying
    # twice) and archives those below archive_below; off where the seed decays on a schedule only
    decay_on_merge: bool = True
    expired_todo_factor: float = Field(0.5, ge=0, le=1)  # seed 001 §6 phase 1.5: an expired todo is down-scored and archived
    used_overlap: float = Field(0.3, ge=0, le=1)  # not from a seed: offline "was it used?" keyword share (seed 003 asks an LLM)


class ExtractionConfig(_Section):
    # seed 002 §6: ≤5 per session. None: no cap — seed 003's monitor runs after every turn
    # (issue 30: its cost is bounded by what each call may do, the caps below, not by turns)
    max_per_session: int | None = Field(5, ge=0)  # seed 002 §6: ≤5 per session
    min_message_chars: int = Field(30, ge=0)  # seed 002 §6: ≥30 chars
    # Bounds on what one LLM reply can change (issue 12: a flood of 3,000 ADDs, an injected
    # "delete all my memories"). Not from a seed: seed 002 §6 keeps extraction to ≤5 runs a
    # session and seed 001 §3.2 offers ≤50 memories per call; a real reply about ≤8000 tokens
    # of history holds a handful of operations. ADD / UPDATE / BOOST: per job and per
    # `history_token_limit` part of its history; DELETE: per job, however long. Over the cap
    # an operation goes to `JobReport.rejected` with the reason; the user's own "forget …"
    # commands are not counted.
    max_adds_per_job: int = Field(20, ge=0)
    max_updates_per_job: int = Field(10, ge=0)
    max_boosts_per_job: int = Field(20, ge=0)
    max_deletes_per_job: int = Field(3, ge=0)
    every_n_user_messages: int = Field(0, ge=0)  # 0: only on end_session / explicit calls
    # Not from a seed (issue 30): what a person asked to forget in a session is not stored again
    # from its turns. An extracted memory, or a turn a summary is written from, counts as what
    # was asked when it holds this share of the request's words (rounded up): a restatement
    # drops some ("Sure, you're flying to Berlin next Wednesday" lacks "work"; 用户下周三去北京
    # lacks 出差). 2/3: a 2-word request needs both, 3 words two, 5 words four. Deleting the
    # memory meant still takes every word (a narrower reading for what cannot be taken back).
    forget_match_share: float = Field(0.66, gt=0, le=1)
    # seed 001 §3.2/5.1 "会话空闲超时自动归档": a session whose last turn is this old gets its
    # unextracted turns queued by the scheduler's poll, the worker and consolidate. The seed
    # names no duration; 30 min is not from a seed. 0: no idle trigger (consolidate's sweep,
    # seed 002 §7 process_unextracted_turns, then takes every session's unextracted turns)
    idle_minutes: float = Field(30.0, ge=0)
    # not from a seed: one sweep queues at most this many unextracted turns (a 100k-turn
    # import is distilled over several runs, each reporting what is left), in jobs of at
    # most sweep_job_turns turns (a failure retries one slice, not the whole import)
    sweep_max_turns: int = Field(2000, ge=1)
    sweep_job_turns: int = Field(200, ge=1)
    existing_top_n: int = Field(50, ge=1)  # seed 001 §3.2 token control
    history_token_limit: int = Field(8000, ge=1)  # seed 001 §3.2: compress longer histories first
    backoff_seconds: list[int] = [600, 1800, 7200, 21600, 43200]  # seed 000: 10m→30m→2h→6h→12h
    max_attempts: int = Field(5, ge=1)  # seed 000
    backlog_backoff_seconds: int = 86_400  # after max_attempts: archive_backlog, back off longer
    # seed 001 §6 phase 1.5: one writer per scope. Not from a seed: a holder on this host whose
    # process is gone loses the lease at once; one elsewhere after this long, which is short
    # because a live holder renews it every third of it (memlane.lease)
    lock_lease_seconds: float = Field(30, gt=0)
    # not from a seed: with an LLM, end_session / add_messages queue extraction, episodes and
    # compaction for a background worker and return at once; True runs them in the caller
    wait_for_llm: bool = False
    worker_poll_seconds: float = Field(30.0, gt=0)  # not from a seed: the worker's look for due jobs (retries run when due)
    worker_stop_seconds: float = Field(5.0, ge=0)  # not from a seed: close() waits this long for a busy worker
    related_per_turn: int = Field(5, ge=0)  # seed 003: the memories retrieval returned, per user turn
    heuristic_confidence: float = Field(0.8, ge=0, le=1)  # not from a seed: patterns guess less surely
    # not from a seed: the offline patterns read sentences up to this long. A longer run of text
    # (a pasted log or document; turns may hold 200,000 characters) is no statement of the
    # user's, and matching the patterns costs time quadratic in it (40k chars: 27 s; 1k: 20 ms)
    heuristic_max_sentence_chars: int = Field(1_000, ge=16)
    # not from a seed (issue 29): a plan the offline extractor dates ("a half marathon in
    # March", "下周三要做产品评审") is kept until the last day its words name plus this many
    # days: it is still talked about just after ("how did the race go?"), then gone
    plan_margin_days: int = Field(7, ge=0)
    # not from a seed (issue 29): a Chinese run of this many characters with no punctuation
    # (voice input, "我们家小孙子下个礼拜天过来住一个月他对鸡蛋过敏你帮我想想…") is cut into clauses
    # where a pronoun opens a new one; a marked clause is rarely this long (dev, holdout: ≤ 21)
    offline_runon_chars: int = Field(24, ge=8)
    # not from a seed (issue 29): an English run of this many words with no punctuation
    # ("im a nurse at st marys i work night shifts mostly…") is cut into sentences where "I"
    # opens a new clause; at 14 every message of dev, holdout and holdout2 reads as before
    offline_runon_words: int = Field(14, ge=4)
    # Not from a seed (issue 28): the offline extractor, the extractive summaries and episodes
    # read each turn's first this many characters. A pasted page is read by its start: a
    # session of 1.2 M characters took 54 s to end (42 s summarising), in the request
    offline_turn_chars: int = Field(8_000, ge=100)
    # not from a seed: how many earlier turns "记住这个 / forget that" may point back to
    command_context_turns: int = Field(6, ge=1)
