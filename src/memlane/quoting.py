"""Quoted passages cut from what a user says (issue 29): a letter to proofread, a sentence to
translate or a joke to explain is not the user speaking, so the offline extractor reads the
user's words without it; a short quoted word or name stays ("don't call me 'buddy'")."""

from __future__ import annotations

import re

# quoted passages: pasted text to translate or proofread, a joke to explain
_QUOTED = re.compile(r"“[^”]{2,}”|「[^」]{2,}」|『[^』]{2,}』|‘[^’]{2,}’|\"[^\"]{2,}\"|(?<![A-Za-z])'(?:[^'\n]|(?<=[A-Za-z])'(?=[A-Za-z])){2,}?'(?![A-Za-z])")


def unquoted(text: str) -> str:
    """The text with its quoted passages cut out (each ends a sentence where it stood). A
    short quoted word or name stays: "don't call me 'buddy'", "sign them 'Best, Lucía'"; so
    does a phrase without punctuation that the sentence goes on after ("never suggest I 'see
    a professional' unless I ask")."""
    cjk = has_cjk_text(text)  # once: each quote of a long paste must not read the whole text again

    def cut(m: re.Match[str]) -> str:
        passage = m.group()[1:-1]
        before, after = text[max(0, m.start() - 200):m.start()], text[m.end():m.end() + 200]
        if len(passage) < 25 and not re.search(r"[。！？!?：:]|\.\s*\S|\.$", passage):
            return m.group()
        if len(passage) < 60 and re.search(r"\bsign (?:it|them|this|that|off)(?: as| with)?[:,]?\s*$", before[-40:], re.I):
            return m.group()  # "sign it 'Dom, Benedetto Lock & Key'": the signature, whatever its length
        embedded = (re.search(r"[A-Za-z]\s*$", before) and re.match(r"\s*[a-z]", after)
                    and not re.search(r"[。！？!?：:.,，;；]", passage))
        if embedded:  # "never suggest I 'reach out to a professional' unless I ask": words mentioned in a clause
            return m.group()
        return "。" if cjk or has_cjk_text(passage) else ". "
    return _QUOTED.sub(cut, text)


def has_cjk_text(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


__all__ = ["has_cjk_text", "unquoted"]
