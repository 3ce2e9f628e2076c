"""The user's people, as English names them (issue 29): the words for kin, pets and the people
around a user ("my sister", "our vet"), and the people a message names in passing ("my husband
Walt put up a fence": whatever the clause says, who Walt is lasts)."""

from __future__ import annotations

import re

# kin, pets and the people around the user: whom "my …" names
EN_KIN_WORDS = (r"(?:mother|father|sister|brother|son|daughter)-in-law|wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|daughter|son|kids?|children|child|baby|"
                r"mom|mum|mother|dad|father|parents|sister|brother|siblings?|grandma|grandpa|grandmother|"
                r"grandfather|aunt|uncle|cousin|niece|nephew|boss|manager|colleague|coworker|co-worker|roommate|"
                r"flatmate|friend|best friend|dog|cat|puppy|kitten|pet|doctor|physio|therapist|landlord|team|"
                r"family|in-laws|neighbou?r|buddy|pal|bestie|classmate|teammate|housemate|stepmom|stepdad|"
                r"ex(?:-(?:wife|husband|boyfriend|girlfriend|partner))?|fianc[ée]|kiddo|twins|toddler|vet|hubby|wifey|"
                r"nephew|niece|godson|goddaughter|grandson|granddaughter")

# "my husband Walt", "my flour supplier Hartley Mills": one of the user's people (kin, or a noun
# of who does something: supplier, dentist, accountant) named in passing, whatever the clause says
# "Neighbor Tom keeps…" at a sentence's start: the "my" left out
_EN_NAMED_ASIDE = re.compile(rf"(?:\b(?i:my|our)\s+(?:(?i:little|older|younger|big|best|new|current|old)\s+)?"
                             rf"(?P<noun>(?i:{EN_KIN_WORDS})|(?:[a-z]+\s+)?[a-z]{{2,}}(?:er|or|ist|ant|ent))|"
                             rf"(?:^|(?<=[.!?]\s))(?P<bare>(?i:{EN_KIN_WORDS})))\s+"
                             r"(?P<name>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b(?!')")
# friends and coworkers: named only where the sentence is about the user too
_EN_AROUND = re.compile(r"(?:friend|buddy|pal|bestie|coworker|co-worker|colleague|neighbou?r|classmate|roommate|"
                        r"flatmate|housemate|teammate)$")


def named_asides(text: str) -> list[tuple[str, str]]:
    """(who, name) for each of the user's people a message names in passing ("my husband Walt
    put up a fence": ("husband", "Walt")); not someone of someone ("my friend's cousin Bob"),
    nor a friend or coworker whose sentence goes on without the user ("my buddy Dave is still
    on two packs a day": his news, not the user's)."""
    out = []
    for m in _EN_NAMED_ASIDE.finditer(text):
        rest = re.split(r"[.!?;\n]", text[m.end():])[0]
        noun = (m.group("noun") or m.group("bare")).lower()
        if not _EN_AROUND.search(noun) or re.search(r"\b(?:me|my|us|our)\b", rest, re.I):
            out.append((noun, m.group("name")))
    return out


__all__ = ["EN_KIN_WORDS", "named_asides"]
