"""Text handling shared by the index, the queries and the budgets.

Chinese has no spaces, and FTS5's built-in tokenizers cannot find 猫 inside 橘猫. We index
CJK runs as unigrams + bigrams (split here, in Python) in a column that FTS5's built-in
`porter unicode61` tokenizer reads; queries are split the same way. The database therefore
stays readable by any SQLite client: no tokenizer is registered from Python.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from typing import Any

from memlane import cjkwords

# Han, kana, hangul: scripts written without spaces between words.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
CJK_RUN = re.compile(f"[{_CJK}]+")
_CJK_CHAR = re.compile(f"[{_CJK}]")
_WORD = re.compile(rf"[^\W{_CJK}]+", re.UNICODE)
# seed 000 keyword regex: /[a-z0-9_]{2,}|[\u4e00-\u9fff]{2,}/gi (we also keep 1-char CJK words
# that jieba marks as words, so 猫 and 腰 are searchable)
_SEED000_KEYWORD = re.compile(r"[a-z0-9_]{2,}|[\u4e00-\u9fff]{2,}", re.IGNORECASE)

ENGLISH_STOP = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "also", "get", "got", "go", "going", "gone", "let", "lets", "like", "likely", "may", "might", "must", "shall", "us", "did", "ever", "s", "t", "d", "ll", "m", "re", "ve", "don", "doesn", "didn", "isn", "wasn", "weren", "hasn", "haven", "hadn", "won", "wouldn", "shouldn", "couldn", "yes", "yeah", "ok", "okay", "oh", "hey", "hi", "hello", "really", "much", "many", "one", "two", "thing", "things", "something", "anything"]
)
CHINESE_STOP = frozenset(
    ["的", "了", "是", "在", "我", "你", "他", "她", "它", "们", "我们", "你们", "他们", "她们", "这", "那", "这个", "那个", "这些", "那些", "就", "也", "都", "和", "与", "及", "或", "而", "但", "但是", "因为", "所以", "如果", "吗", "呢", "吧", "啊", "呀", "哦", "嗯", "么", "什么", "怎么", "怎样", "为什么", "哪", "哪里", "哪个", "谁", "有", "没有", "没", "不", "很", "还", "又", "再", "把", "被", "给", "让", "对", "从", "到", "向", "跟", "一个", "一些", "一下", "一点", "之", "其", "着", "过", "会", "能", "要", "想", "说", "请", "帮", "帮我", "可以", "已经", "还是", "就是", "自己", "上", "下", "里", "中", "个", "吗", "呐", "嘛", "啦", "之前", "以后", "时候", "今天", "去", "来", "做", "得", "地", "等"]
)


def has_cjk(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None


def cjk_grams(run: str) -> list[str]:
    """Unigrams then bigrams of one CJK run: 橘猫 → 橘 猫 橘猫."""
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def index_text(text: str) -> str:
    """The string stored in an FTS5 column: Latin text as is, CJK runs as 1- and 2-grams."""
    return CJK_RUN.sub(lambda m: " " + " ".join(cjk_grams(m.group())) + " ", text)


def segment(run: str) -> list[str]:
    """Words of one CJK run, by jieba's dictionary (memlane.cjkwords: without jieba's
    start-up); used for query keywords and highlighting."""
    if len(run) <= 2:
        return [run]
    return cjkwords.segment(run, cjkwords.dictionary(), CHINESE_STOP.__contains__)


def keywords(text: str, limit: int | None = None) -> list[str]:
    """Query keywords: Latin words ≥ 2 chars, CJK words from jieba, stop words removed.

    Order is first appearance; duplicates dropped. A CJK run whose words are all stop words
    keeps nothing, so "我对什么过敏" yields ["过敏"].
    """
    out: list[str] = []
    seen: set[str] = set()
    pos = 0
    for m in CJK_RUN.finditer(text):
        _latin_words(text[pos : m.start()], out, seen)
        for word in segment(m.group()):
            if word not in CHINESE_STOP and word not in seen and CJK_RUN.fullmatch(word):
                seen.add(word)
                out.append(word)
        pos = m.end()
    _latin_words(text[pos:], out, seen)
    return out[:limit] if limit else out


def _latin_words(chunk: str, out: list[str], seen: set[str]) -> None:
    for word in _WORD.findall(chunk.lower()):
        if len(word) >= 2 and word not in ENGLISH_STOP and word not in seen and not word.isdigit():
            seen.add(word)
            out.append(word)


def seed000_keywords(text: str, limit: int = 6) -> list[str]:
    """Seed 000's own keyword rule, verbatim: its regex, stop words removed, first `limit`."""
    out: list[str] = []
    for word in _SEED000_KEYWORD.findall(text):
        w = word.lower()
        if w not in ENGLISH_STOP and w not in CHINESE_STOP and w not in out:
            out.append(w)
    return out[:limit]


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def index_term(word: str) -> str:
    """The term FTS5's `porter unicode61` tokenizer stores for a query word."""
    return word if CJK_RUN.fullmatch(word) else _porter().stemWord(word.lower())


@functools.lru_cache(maxsize=1)
def _porter() -> Any:
    import Stemmer

    return Stemmer.Stemmer("porter")


# the english stemmer's only rewrites of a word's first two letters: dying, lying, tying
_Y_FORMS = {"di": "dy", "li": "ly", "ti": "ty"}


def highlights(keywords_: Iterable[str], text: str) -> list[str]:
    """The query keywords a text contains: CJK as substrings, Latin words by their stem
    (so "runs" highlights "running", as FTS5's porter tokenizer matched it)."""
    stemmer = _stemmer()
    lowered = text.lower()
    keys = list(keywords_)
    wanted = {k: stemmer.stemWord(k) for k in keys if not CJK_RUN.fullmatch(k)}
    # the stemmer rewrites endings only: a word can stem to a keyword's stem only if it
    # starts as that stem does (or is one of _Y_FORMS), so the rest of a long text is never
    # stemmed (issue 14)
    starts = {s[:2] for s in wanted.values()}
    starts |= {_Y_FORMS[s] for s in starts if s in _Y_FORMS}
    stems = set(stemmer.stemWords([w for w in set(_WORD.findall(lowered)) if w[:2] in starts])) if starts else set()
    return [k for k in keys if (wanted[k] in stems if k in wanted else k in lowered)]


def fts_terms(words: Iterable[str]) -> list[str]:
    """Index terms for query words: CJK words become their bigrams (or the lone character)."""
    terms: dict[str, None] = {}  # ordered, and linear: a 100k-character query has ~50k terms
    for word in words:
        if CJK_RUN.fullmatch(word):
            grams = [word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)]
        else:
            grams = [word]
        terms.update(dict.fromkeys(grams))
    return list(terms)


def fts_query(terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression OR-ing the quoted terms (quotes neutralise FTS syntax)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def estimate_tokens(text: str) -> int:
    """A CJK-aware token estimate: one per CJK character, one per ~4 other characters."""
    if not text:
        return 0
    cjk = len(_CJK_CHAR.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


TRUNCATED = "…[truncated]"


def cut(text: str, max_chars: int) -> str:
    """Seed 000's cut: at most `max_chars` characters, then a visible [truncated] marker."""
    text = text.strip()
    return text if len(text) <= max_chars else text[:max_chars].rstrip() + TRUNCATED


def read_part(text: str, chars: int) -> str:
    """What is read of a long query: all of it, or its start and its end, `chars` in all. A
    pasted page with its question at the end, or a question with a page after it: either way
    the words that ask are kept, at a cost that does not grow with what was pasted."""
    if len(text) <= chars:
        return text
    head = chars // 2
    return f"{text[:head]}\n{text[len(text) - (chars - head):]}"


def language_of(text: str) -> str:
    """'zh' when CJK characters make up a real share of the letters, else 'en'."""
    cjk = len(_CJK_CHAR.findall(text))
    latin = len(re.findall(r"[A-Za-z]", text))
    return "zh" if cjk and cjk * 3 >= latin else "en"


def neighbour_context(texts: dict[int, str], seq: int, width: int) -> str:
    """A turn's context column: the text of the turns within `width` of it in its session
    (`texts` by seq), itself left out. Whole: cutting each neighbour to its first 300
    characters cost LongMemEval 1.7 pts R@10 and changed nothing elsewhere (issue 14)."""
    return " ".join(texts[s] for s in range(seq - width, seq + width + 1) if s != seq and s in texts)


_EMOTICON = re.compile(r"(?<!\w)[:;=]['-]?[()\[\]](?!\w)")  # ":(", ";)", ":-(": a face, not a bracket


_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B50\u2B55\uFE0F\u200D]+")


def cleaned(text: str) -> str:
    """A memory's text without what is no part of a fact: emoji, bracket faces (":(", ";)") and
    brackets that close nothing or open nothing — a clause cut from "my son (he's 8) dislikes
    fish) lol" keeps its pairs only, "我喜欢（白茶" reads "我喜欢白茶"."""
    text = _EMOTICON.sub("", _EMOJI.sub(" ", text))
    kept: list[str] = []
    opened: list[int] = []
    for ch in text:
        if ch in "(（":
            opened.append(len(kept))
        elif ch in ")）":
            if not opened:
                continue
            opened.pop()
        kept.append(ch)
    for i in reversed(opened):
        del kept[i]
    text = re.sub(r"\s+(?=[.,;:!?。，；：！？])", "", re.sub(r"\s{2,}", " ", "".join(kept))).strip()
    return re.sub(r"[，,]+([.。]?)$", r"\1", text)
