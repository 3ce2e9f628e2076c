"""A row's absolute relevance: how well it answers the query in [0, 1], the same whatever
else the search found — the share of the query's keywords it holds or-ed with how much nearer
by meaning it is than ordinary talk about nothing (`NULL_TEXTS`). Hits report it as their
`score`, and `min_score` cuts on it."""

from __future__ import annotations

from collections.abc import Sequence

from memlane.text import highlights

# Ordinary talk about nothing in particular. How near a query is to these is where its
# unrelated text sits for this embedder (e5 puts it near 0.8, the hash embedder near 0): a
# memory's dense relevance is how much nearer than that it is (issue 13, 18).
NULL_TEXTS = ("你好，最近怎么样？", "Hello, how are you?", "今天是星期几", "What time is it?",
              "这是一个普通的句子。", "This is an ordinary sentence.", "谢谢", "Thank you.")


def absolute_relevance(words: Sequence[str], held: Sequence[str], similarity: float, null: float | None,
                       weights: dict[str, float] | None = None, dense_scale: float = 1.0) -> float:
    """An absolute relevance in [0, 1], the same whatever else the search found: the share of
    the query's keywords the text holds (`held`, its highlights; by `weights` where given),
    or-ed with the cosine's lift over the query's similarity to `NULL_TEXTS` (`null`; None:
    no dense side)."""
    if weights is None:
        lexical = len(held) / len(words) if words else 0.0
    else:
        total = sum(weights.get(w, 0.0) for w in words)
        lexical = sum(weights.get(w, 0.0) for w in held) / total if total > 0 else 0.0
    dense = 0.0
    if null is not None and similarity != 0.0 and null < 1.0:
        dense = min(1.0, max(0.0, dense_scale * (similarity - null) / (1.0 - null)))
    return 1.0 - (1.0 - lexical) * (1.0 - dense)


class Relevance:
    """`absolute_relevance` of one search's rows: its words and their weights, the lift's
    reference `null` (known once the query's vector is), and each text's highlights found
    once (a long turn's cost)."""

    def __init__(self, words: Sequence[str], weights: dict[str, float] | None, dense_scale: float) -> None:
        self.words = words
        self.weights = weights
        self.dense_scale = dense_scale
        self.null: float | None = None
        self._held: dict[str, list[str]] = {}

    def held(self, text: str) -> list[str]:
        """The query's words `text` holds (its highlights), found once."""
        if text not in self._held:
            self._held[text] = highlights(self.words, text)
        return self._held[text]

    def of(self, text: str, similarity: float) -> float:
        return absolute_relevance(self.words, self.held(text), similarity, self.null, self.weights, self.dense_scale)

    def highlights(self, text: str) -> list[str]:
        """`text`'s highlights: as found for its relevance where they were."""
        return list(self._held[text]) if text in self._held else highlights(self.words, text)
