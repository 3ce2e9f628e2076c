"""Shared helpers of the benchmarks: timing, retrieval metrics, tables, JSON results."""

from __future__ import annotations

import atexit
import json
import math
import os
import platform
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

RESULTS = Path(__file__).parent / "results"
CACHE = Path(__file__).parent / ".cache"
console = Console(width=150)
# what `--llm` takes from the environment: the engine's own HTTP client on that server
LLM_ENV = ("MEMLANE_LLM_BASE_URL", "MEMLANE_LLM_MODEL", "MEMLANE_LLM_API_KEY")


def temp_home(prefix: str = "memlane-bench-", dir: str | Path | None = None) -> Path:
    """A fresh folder for a bench's stores, removed when the process exits: a bench run leaves
    no database behind (`make bench` left ~10 GB of them in /tmp, and a full disk fails tests)."""
    home = Path(tempfile.mkdtemp(prefix=prefix, dir=dir))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    return home


def cache_file(model_id: str) -> Path:
    return CACHE / f"embeddings-{re.sub(r'[^A-Za-z0-9_.-]', '_', model_id)}.npz"


def load_cache(model_id: str) -> dict[str, np.ndarray]:
    """The bench's embedding cache between runs: {content hash (or "q:" + hash): vector}."""
    path = cache_file(model_id)
    if not path.exists():
        return {}
    with np.load(path) as data:
        if "hashes" in data.files and "vectors" in data.files:
            return dict(zip(data["hashes"].tolist(), data["vectors"], strict=True))
        return {k: data[k] for k in data.files}  # the older one-array-per-key layout


def save_cache(model_id: str, items: dict[str, np.ndarray]) -> None:
    """One matrix and its keys: loads in a second where 40k separate arrays took a minute."""
    CACHE.mkdir(parents=True, exist_ok=True)
    keys = list(items)
    matrix = np.stack([np.asarray(items[k], dtype=np.float32) for k in keys]) if keys else np.zeros((0, 0), np.float32)
    tmp = cache_file(model_id).with_suffix(".tmp.npz")
    np.savez(tmp, hashes=np.array(keys), vectors=matrix)
    tmp.replace(cache_file(model_id))


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Fraction of the relevant items found in the top k."""
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def hit_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return 1.0 if relevant.intersection(ranked[:k]) else 0.0


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(ranked[:k]) if r in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def metrics(ranked: Sequence[str], relevant: set[str]) -> dict[str, float]:
    return {
        "R@5": recall_at(ranked, relevant, 5), "R@10": recall_at(ranked, relevant, 10),
        "R@20": recall_at(ranked, relevant, 20), "Hit@5": hit_at(ranked, relevant, 5),
        "Hit@10": hit_at(ranked, relevant, 10), "NDCG@10": ndcg_at(ranked, relevant, 10),
    }


def mean_metrics(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    rows = list(rows)
    if not rows:
        return {}
    return {k: statistics.fmean(r[k] for r in rows) for k in rows[0]}


def paired_interval(a: Sequence[float], b: Sequence[float], resamples: int = 2000,
                    seed: int = 14) -> tuple[float, float]:
    """95 % bootstrap interval of mean(a − b) over paired questions: the questions are drawn
    again with replacement. A difference whose interval holds 0 is one that another draw of
    questions of the same kind could undo."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.size == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    # 200 resamples at a time: LoCoMo has ~2k questions
    means = np.concatenate([d[rng.integers(0, d.size, (min(200, resamples - i), d.size))].mean(axis=1)
                            for i in range(0, resamples, 200)])
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    t = Table(title=title)
    for c in columns:
        t.add_column(c, justify="left" if c == columns[0] else "right")
    for r in rows:
        t.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in r])
    return t


def write_result(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {"benchmark": name, "at": datetime.now(UTC).isoformat(), "machine": platform.platform(), **data}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    return path


def llm_settings(environ: Mapping[str, str] = os.environ) -> dict[str, str] | None:
    """The MEMLANE_LLM_* settings a bench's `--llm` runs with; None, and a line saying what is
    missing, when MEMLANE_LLM_BASE_URL is not set (the caller exits with 2)."""
    if not environ.get("MEMLANE_LLM_BASE_URL"):
        console.print("--llm needs MEMLANE_LLM_BASE_URL (and MEMLANE_LLM_MODEL / MEMLANE_LLM_API_KEY)")
        return None
    return {k: environ[k] for k in LLM_ENV if k in environ}


def llm_only(env: Mapping[str, str] | None) -> dict[str, str]:
    """Only the LLM settings of `env` (a bench's engine takes nothing else from it), empty
    ones dropped: `Config.load(env=llm_only(env))` is offline when `env` is None."""
    return {k: v for k, v in (env or {}).items() if k in LLM_ENV and v}
