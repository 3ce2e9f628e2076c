"""Other memory engines on the LoCoMo bench, under memlane's conditions: the same turns, the
same embedder and vectors, the same questions and metrics.

mem0 (the `mem0ai` package, OSS `Memory`) stores each turn with `infer=False` — no LLM
extracts facts — in its default local Qdrant (on disk, in a temporary folder), with
memlane's embedder plugged in as its embedding model. Nothing leaves the machine:
telemetry is off, the LLM it insists on building points at 127.0.0.1 and is replaced by a
guard that fails on any call. Its search latency is that of qdrant-client's local mode,
which checks the user_id filter point by point in Python (most of a search's time), not of
a Qdrant server.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from common import Timer, metrics, percentile, temp_home

MEM0_LABEL = "mem0 (infer=False, same embedder)"
# Where an LLM or embedding API would be called if anything slipped through: nothing listens.
OFFLINE_URL = "http://127.0.0.1:9/v1"


@dataclass
class PeerConversation:
    user: str
    turns: dict[str, str]  # dia_id → turn text, as memlane stores it
    questions: list[dict[str, Any]]  # {"question", "evidence", "category"}


def _offline_env() -> None:
    """Read by mem0 once, when first imported: no telemetry, and its own files (config.json,
    notice state) in a temporary folder rather than ~/.mem0."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(temp_home("memlane-mem0-dir-")))


def require_mem0() -> None:
    """Fail early and plainly when mem0ai is missing (before the long memlane runs)."""
    _offline_env()
    try:
        import mem0  # noqa: F401
    except ImportError as e:
        raise SystemExit(f"--peer mem0 needs the mem0ai package: pip install mem0ai ({e})") from None


class _NoLLM:
    """Stands in for mem0's LLM: with infer=False it must never be asked anything."""

    def generate_response(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("mem0 peer: an LLM call was attempted although infer=False")


def _embedding_model(dims: int, passages: Callable[[Sequence[str]], np.ndarray],
                     query: Callable[[str], np.ndarray]) -> Any:
    """memlane's embedder behind mem0's `EmbeddingBase`: 'search' embeds as a query (e5's
    query prefix), 'add'/'update' as a passage; both served from the bench cache."""
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.embeddings.base import EmbeddingBase

    class MemlaneEmbedding(EmbeddingBase):
        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            if memory_action == "search":
                return query(text).tolist()
            return passages([text])[0].tolist()

        def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
            if memory_action == "search":
                return [query(t).tolist() for t in texts]
            return passages(texts).tolist()

    return MemlaneEmbedding(BaseEmbedderConfig(embedding_dims=dims))


def run_mem0(convs: Sequence[PeerConversation], dims: int,
             passages: Callable[[Sequence[str]], np.ndarray], query: Callable[[str], np.ndarray],
             k: int = 20) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows like the other systems' (one per question) and a summary: ingest time, search
    latency, and which of mem0's hybrid signals (BM25, entity boost) were active."""
    from importlib.metadata import version

    _offline_env()
    home = temp_home("memlane-mem0-")
    from mem0 import Memory as Mem0
    from mem0.configs.base import MemoryConfig

    fake = {"api_key": "sk-offline", "openai_base_url": OFFLINE_URL}
    config = MemoryConfig(
        vector_store={"provider": "qdrant", "config": {"collection_name": "locomo", "path": str(home / "qdrant"),
                                                       "embedding_model_dims": dims}},
        llm={"provider": "openai", "config": fake},
        embedder={"provider": "openai", "config": {**fake, "embedding_dims": dims}},
        history_db_path=str(home / "history.db"),
    )
    m = Mem0(config)
    m.embedding_model = _embedding_model(dims, passages, query)
    m.llm = _NoLLM()

    n_memories = 0
    with Timer() as t_ingest:
        for conv in convs:
            for dia_id, text in conv.turns.items():
                m.add(text, user_id=conv.user, metadata={"dia_id": dia_id}, infer=False)
                n_memories += 1

    rows: list[dict[str, Any]] = []
    latencies: list[float] = []
    with_bm25 = with_entity = 0
    for conv in convs:
        for q in conv.questions:
            t0 = time.perf_counter()
            hits = m.search(q["question"], top_k=k, filters={"user_id": conv.user}, explain=True)["results"]
            latencies.append((time.perf_counter() - t0) * 1000)
            ranked = [str((h.get("metadata") or {}).get("dia_id")) for h in hits]
            rows.append({"category": q["category"], **metrics(ranked, q["evidence"])})
            details = [h.get("score_details") or {} for h in hits]
            with_bm25 += any(d.get("bm25_score", 0) > 0 for d in details)
            with_entity += any(d.get("entity_boost", 0) > 0 for d in details)
    m.close()

    n = max(len(rows), 1)
    return rows, {
        "system": MEM0_LABEL, "mem0ai": version("mem0ai"),
        "vector_store": "qdrant, local mode on disk (cosine)", "infer": False,
        "memories": n_memories, "ingest_seconds": t_ingest.seconds,
        "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
        # mem0 adds BM25 (fastembed's Qdrant/bm25) and spaCy entity boosts to the cosine score
        # when those load; offline they may not, and then it ranks by cosine alone
        "searches_with_bm25_signal": with_bm25 / n, "searches_with_entity_boost": with_entity / n,
    }
