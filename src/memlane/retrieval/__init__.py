"""Hybrid retrieval over the three corpora: memories, turns (conversation traces), episodes.

query → keywords (CJK words via jieba, stemmed Latin words via FTS5 porter) → FTS5 BM25
candidates ∪ vector KNN candidates → every candidate scored densely → fusion → turn priors
(length, question, reply, speaker, role, session) → composite rank (relevance, importance,
recency) → filters (scope always; expiry, status, category, time) → hits.

The modules, in the order a search uses them:

- `query`: what a query asks — its keywords, the words too common to count, the text the
  dense side embeds, the conversation it names, whose words it asks about;
- `candidates`: the lexical and the dense candidates of one pool, each scored on both sides;
- `fuse`: the two sides fused into one relevance;
- `priors`: the turn priors that move a turn up or down by where and how it was said;
- `relevance`: a row's absolute relevance, the same whatever else the search found;
- `filters`: what a search may return besides the scope;
- `search`: `search()`, the pools widened until the page is full, ranked per corpus;
- `bm25`: the BM25 formula, written once, for the stores and seed 000's file search.

This package's `__init__` imports nothing: the store takes `memlane.retrieval.bm25`, a leaf,
without pulling in the search that imports the store.
"""
