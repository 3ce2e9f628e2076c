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


# a request to work on text ("帮我缩成三句话", "proofread this:", "translate the below"), said on
# the line before the text it works on
_WORK_ON_TEXT = re.compile(
    r"缩|改|润色|翻译|总结|概括|精简|校对|检查|看看|看一下|看下|改写|扩写|优化|回复|回一下|写个回复|这段|下面|以下|"
    r"\b(?:shorten|summari[sz]e|translate|proofread|rewrite|edit|fix|polish|tighten|check|improve|condense|reword|"
    r"rephrase|reply to|respond to|simplify|explain|tl;?dr|below|following|this (?:text|email|message|paragraph|post|"
    r"letter|notice|announcement|article))\b", re.I)
# the user in the pasted text: their own bio or letter is theirs ("我叫…", "I'm a…"); "我物业" /
# "我司" is an organisation speaking
_FIRST_PERSON = re.compile(r"我(?![司行校院部局厅处会们]|物业|公司|单位|中心)|\b(?:I|I'm|I've|my|me)\b")
_PASTE_CHARS = 60  # a block shorter than this is a message of the user's own, not a pasted text


def unpasted(text: str) -> str:
    """The text without a block pasted under a request to work on it ("这段太长了 帮我缩成三句话"
    + a notice): what an organisation or another writer says there is not the user speaking. A
    block in the first person stays (the user's own bio or letter)."""
    head, sep, block = text.partition("\n")
    if not sep or len(head) > 80 or len(block.strip()) < _PASTE_CHARS or not _WORK_ON_TEXT.search(head) \
            or _FIRST_PERSON.search(block):
        return text
    return head


def has_cjk_text(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


__all__ = ["has_cjk_text", "unpasted", "unquoted"]
