"""Where an embedder keeps a text's language, so that memory search can leave it out.

A multilingual embedder such as e5 aligns meaning across languages, yet also keeps the
language itself as a direction of its own: a Chinese question sits nearer every Chinese
memory than any English one, whatever they say (issue 29: Chinese questions about English
memories found none of them in the top 5). The direction is estimated once per embedder from
the parallel sentences below — the same statements and questions in English and Chinese, so
the difference of their means is language and nothing else — and the query vector loses its
component along it: what is left ranks a memory by what it says, in either language. What
bias remains is a level: each language's candidates are then standardised apart (retrieval/fuse.py).

An embedder that does not align the languages (the hash embedder: a translation shares no
feature with its original) has nothing to correct and gets no direction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Everyday statements in the style of memories, and questions, in both languages. Not taken
# from any bench set; what they say does not matter, only that each pair says the same.
PARALLEL: tuple[tuple[str, str], ...] = (
    ("The user likes to read in the evening.", "用户喜欢在晚上看书。"),
    ("The user's brother is a teacher in a small town.", "用户的哥哥在一个小镇当老师。"),
    ("The weather was cold and rainy yesterday.", "昨天天气又冷又下雨。"),
    ("The user bought a new bicycle last week.", "用户上周买了一辆新自行车。"),
    ("Where is the nearest train station?", "最近的火车站在哪里？"),
    ("The meeting was moved to Thursday afternoon.", "会议改到了周四下午。"),
    ("The user does not drink alcohol.", "用户不喝酒。"),
    ("What time does the shop open on Sundays?", "商店周日几点开门？"),
    ("The user is learning to play the guitar.", "用户在学弹吉他。"),
    ("Her grandmother turned ninety this year.", "她的奶奶今年九十岁了。"),
    ("The user prefers short answers without examples.", "用户喜欢简短的回答，不要举例子。"),
    ("How long does it take to boil an egg?", "煮一个鸡蛋要多长时间？"),
    ("The user moved to a bigger apartment near the river.", "用户搬到了河边一套更大的公寓。"),
    ("The project deadline is the end of next month.", "项目的截止日期是下个月底。"),
    ("Who wrote this book about the history of tea?", "这本关于茶的历史的书是谁写的？"),
    ("The user's daughter started primary school in September.", "用户的女儿九月份开始上小学。"),
    ("The user gets headaches when sleeping too little.", "用户睡得太少就会头疼。"),
    ("Please remind me to call the bank tomorrow morning.", "请提醒我明天早上给银行打电话。"),
    ("The user thinks the new phone is too expensive.", "用户觉得新手机太贵了。"),
    ("Which of these two jackets is warmer?", "这两件夹克哪件更暖和？"),
    ("The user visited an old friend in the mountains.", "用户去山里看望了一位老朋友。"),
    ("The user always takes the bus to work.", "用户总是坐公交车上班。"),
    ("Did you finish the report I sent on Monday?", "我周一发的报告你看完了吗？"),
    ("The user wants to save money for a trip abroad.", "用户想攒钱出国旅行。"),
)


@dataclass(frozen=True)
class LanguageAxes:
    """Where an embedder keeps a text's language: `basis`, orthonormal rows spanning the
    language directions of its passages and of its queries (e5 embeds them apart: "query: …",
    "passage: …"); `passage_axis`, the passages' direction alone, along which a row's language
    is read; `midpoint`, between the two languages' means along it."""

    basis: np.ndarray
    passage_axis: np.ndarray
    midpoint: float

    def chinese(self, along_axis: float) -> bool:
        """Whether a row is Chinese, from its vector's dot product with `passage_axis`."""
        return along_axis > self.midpoint


PARALLEL_TEXTS: tuple[str, ...] = tuple(text for pair in PARALLEL for text in pair)  # English, Chinese, …


def language_axes(english: np.ndarray, chinese: np.ndarray, english_queries: np.ndarray,
                  chinese_queries: np.ndarray, min_alignment: float) -> LanguageAxes | None:
    """The language directions from the embedded `PARALLEL` pairs (rows in the same order), as
    passages and as queries; None when the embedder does not align the languages: its
    translations are no nearer each other than unrelated sentences of the two languages are,
    by `min_alignment` of cosine."""
    pairs = english @ chinese.T
    n = len(pairs)
    if n < 2:
        return None
    aligned = float(np.trace(pairs)) / n - float(pairs.sum() - np.trace(pairs)) / (n * n - n)
    passage = chinese.mean(axis=0) - english.mean(axis=0)
    query = chinese_queries.mean(axis=0) - english_queries.mean(axis=0)
    if aligned < min_alignment or float(np.linalg.norm(passage)) == 0.0:
        return None
    passage = passage / np.linalg.norm(passage)
    q, r = np.linalg.qr(np.stack([passage, query], axis=1))
    basis = q[:, : int(np.sum(np.abs(np.diag(r)) > 1e-6))].T  # the query direction may add nothing
    midpoint = (float(np.mean(english @ passage)) + float(np.mean(chinese @ passage))) / 2
    return LanguageAxes(basis.astype(np.float32), passage.astype(np.float32), midpoint)


def without_language(vector: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """`vector` without its component along `axes` (orthonormal rows), at unit length again."""
    if axes.size == 0 or vector.shape[-1] != axes.shape[1]:
        return vector
    out = vector - (axes @ vector) @ axes
    norm = float(np.linalg.norm(out))
    return (out / norm).astype(vector.dtype) if norm > 0 else vector
