"""Chinese words of a query, without jieba's half-second start-up.

jieba segments well, but `jieba.initialize()` unmarshals a 500k-entry dictionary, ~0.4 s:
that was most of a fresh process's first Chinese search (the CLI and a serverless agent start
one per call; issue 14 asks ≤ 30 ms). This module reads jieba's own dictionary (`dict.txt`,
shipped in the jieba wheel) once, sorts it into a numpy array of UTF-8 words with their log
frequencies, and saves that beside the user's other caches; every later process memory-maps
it (~1 ms) and looks words up with `searchsorted`.

Segmentation is jieba's: every dictionary word starting at each character (the DAG), then the
route of highest summed log frequency. jieba's HMM, which guesses words the dictionary lacks
from single characters, is replaced by keeping such a run of non-stop characters together —
the search turns a word into its bigrams anyway, so 小蕾 stays findable as 小蕾.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import io
import math
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memlane import atomicfile

MAX_WORD = 8  # characters; jieba's dictionary has 538 longer entries (idioms, names) of 349k
_WIDTH = 4 * MAX_WORD  # bytes of the longest UTF-8 word kept
_RECORD = np.dtype([("w", f"S{_WIDTH}"), ("f", "<f8")])
_TOTAL = b"\xff" * _WIDTH  # never UTF-8, so it sorts after every word


def jieba_dictionary() -> Path | None:
    """jieba's dict.txt, found without importing jieba (its import alone costs ~80 ms)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "dict.txt"
    return path if path.is_file() else None


def cache_dir() -> Path:
    """MEMLANE_CACHE_DIR, else $XDG_CACHE_HOME/memlane, else ~/.cache/memlane."""
    if os.environ.get("MEMLANE_CACHE_DIR"):
        return Path(os.environ["MEMLANE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memlane"


class Dictionary:
    """Sorted words (UTF-8, fixed width) and their log frequencies."""

    def __init__(self, words: np.ndarray, logfreq: np.ndarray, log_total: float) -> None:
        self.words, self.logfreq, self.log_total = words, logfreq, log_total

    @classmethod
    def parse(cls, lines: list[str]) -> Dictionary:
        """From dict.txt lines: `word freq [tag]`."""
        entries: dict[bytes, int] = {}
        total = 0
        for line in lines:
            parts = line.split(" ")
            if len(parts) < 2 or not parts[1].isdigit():
                continue
            freq = int(parts[1])
            total += freq
            raw = parts[0].encode("utf-8")
            if len(parts[0]) <= MAX_WORD and len(raw) <= _WIDTH:
                entries[raw] = entries.get(raw, 0) + freq
        keys = sorted(entries)
        words = np.array(keys, dtype=f"S{_WIDTH}")
        logfreq = np.array([math.log(max(entries[k], 1)) for k in keys], dtype=np.float64)
        return cls(words, logfreq, math.log(max(total, 1)))

    def lookup(self, candidates: list[str]) -> np.ndarray:
        """The log frequency of each candidate, NaN where it is not a word."""
        keys = np.array([c.encode("utf-8") for c in candidates], dtype=f"S{_WIDTH}")
        if not len(self.words):
            return np.full(len(keys), np.nan)
        at = np.searchsorted(self.words, keys)
        at = np.minimum(at, len(self.words) - 1)
        found = self.words[at] == keys
        return np.where(found, self.logfreq[at], np.nan)

    def save(self, path: Path) -> None:
        """One .npy of (word, log frequency) records, the total as a last record whose word
        sorts after every UTF-8 word; written to a temporary file and renamed, so a reader
        never sees half a cache."""
        table = np.empty(len(self.words) + 1, dtype=_RECORD)
        table["w"][:-1], table["f"][:-1] = self.words, self.logfreq
        table[-1] = (_TOTAL, self.log_total)
        data = io.BytesIO()
        np.save(data, table)
        atomicfile.replace(path, data.getvalue())

    @classmethod
    def load(cls, path: Path) -> Dictionary:
        """Memory-mapped: a process reads only the pages its lookups touch."""
        table = np.load(path, mmap_mode="r")
        if table.dtype != _RECORD or len(table) < 2 or table["w"][-1] != _TOTAL:
            raise ValueError(f"{path}: not a word table")
        return cls(table["w"][:-1], table["f"][:-1], float(table["f"][-1]))


@functools.lru_cache(maxsize=1)
def dictionary() -> Dictionary:
    """jieba's dictionary from the cache, built and saved on first use. Without jieba's
    file an empty one: every character is then unknown, and runs are kept whole."""
    source = jieba_dictionary()
    if source is None:
        return Dictionary(np.array([], dtype=f"S{_WIDTH}"), np.array([], dtype=np.float64), 0.0)
    stat = source.stat()
    tag = hashlib.sha1(f"{source}|{stat.st_size}|{stat.st_mtime_ns}|{MAX_WORD}".encode()).hexdigest()[:12]
    path = cache_dir() / f"cjkwords-{tag}.npy"
    # EOFError: an empty file, as a crash can leave one (numpy reads no header)
    with contextlib.suppress(OSError, ValueError, EOFError):
        return Dictionary.load(path)
    built = Dictionary.parse(source.read_text(encoding="utf-8").splitlines())
    with contextlib.suppress(OSError):  # an unwritable cache still segments, only slower
        built.save(path)
    return built


def segment(run: str, dic: Dictionary, is_stop: Callable[[str], bool]) -> list[str]:
    """Words of one CJK run: jieba's highest-frequency route over the dictionary's words,
    with runs of single characters outside it (and not stop words) kept together."""
    return _join_unknown(route(run, dic), dic, is_stop)


def route(run: str, dic: Dictionary) -> list[str]:
    """jieba's `cut(run, HMM=False)`: of the ways to split `run` into dictionary words (an
    unknown character is a word of frequency 1), the one of highest summed log frequency."""
    n = len(run)
    spans = [(i, j) for i in range(n) for j in range(i + 2, min(n, i + MAX_WORD) + 1)]
    logs = dic.lookup([run[i:j] for i, j in spans] + list(run)) if n else np.array([])
    ends: list[dict[int, float]] = [{} for _ in range(n)]
    for (i, j), lf in zip(spans, logs[: len(spans)], strict=True):
        if not np.isnan(lf):
            ends[i][j] = float(lf)
    for i, lf in enumerate(logs[len(spans):]):
        ends[i][i + 1] = 0.0 if np.isnan(lf) else float(lf)  # an unknown character: frequency 1
    best = [0.0] * (n + 1)
    step = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        best[i], step[i] = max((lf - dic.log_total + best[j], j) for j, lf in ends[i].items())
    words: list[str] = []
    i = 0
    while i < n:
        words.append(run[i:step[i]])
        i = step[i]
    return words


def _join_unknown(words: list[str], dic: Dictionary, is_stop: Callable[[str], bool]) -> list[str]:
    """Consecutive single characters that are not stop words, joined where jieba's HMM would
    have guessed a word ("小蕾"); a run that is itself a dictionary word is one already."""
    out: list[str] = []
    buf = ""
    for w in [*words, ""]:
        if len(w) == 1 and not is_stop(w):
            buf += w
            continue
        if buf:
            out.extend([buf] if len(buf) == 1 or np.isnan(dic.lookup([buf])[0]) else list(buf))
            buf = ""
        if w:
            out.append(w)
    return out
