"""What a person does, as English names it (issue 29): the head nouns of jobs, trades and
studies, for telling a self-introduction said as a headline ("bartender on Frenchmen St, jazz
fest is coming…", "retired high school principal, 67, …") from a noun phrase about a thing
("water heater in the basement, …"). A lexicon of heads, not of whole titles: what stands
before the head ("coast guard rescue", "first year hvac") is kept as said."""

from __future__ import annotations

import re

# heads that name a job or a study in any field; "-er"/"-or" words are listed, never guessed
# (a "printer", a "heater", a "monitor" are things)
_HEADS = (
    "accountant|actor|actress|adjuster|administrator|agent|aide|analyst|anesthetist|anaesthetist|announcer|apprentice|"
    "appraiser|auctioneer|bassist|cellist|dockworker|drummer|guitarist|longshoreman|pianist|ranger|rider|saxophonist|"
    "stevedore|stocker|trumpeter|violinist|vocalist|warden|"
    "arborist|archaeologist|architect|archivist|artist|assistant|associate|astronomer|athlete|attendant|attorney|"
    "auditor|author|baker|banker|barber|barista|bartender|beekeeper|bookkeeper|bouncer|brewer|bricklayer|broker|"
    "builder|busser|butcher|buyer|caddie|captain|caregiver|carer|carpenter|carrier|cashier|caterer|chaplain|chef|"
    "chemist|chiropractor|cleaner|clerk|clinician|coach|conductor|consultant|contractor|cook|coordinator|copywriter|"
    "counsel?lor|courier|curator|custodian|dancer|deckhand|dentist|deputy|designer|detective|developer|dietitian|"
    "director|dispatcher|diver|doctor|doula|drafter|driver|economist|editor|educator|electrician|engineer|"
    "entrepreneur|estimator|executive|farmer|farmhand|firefighter|fisherman|florist|foreman|founder|freelancer|"
    "gardener|geologist|groomer|guard|guide|hairdresser|hairstylist|handyman|hygienist|illustrator|influencer|"
    "inspector|installer|instructor|intern|interpreter|investigator|janitor|jeweler|jeweller|journalist|judge|"
    "keeper|laborer|labourer|landlord|landscaper|lawyer|lecturer|librarian|lifeguard|lineman|lineworker|locksmith|"
    "machinist|maid|mail carrier|mailman|manager|marketer|mason|mechanic|medic|midwife|miner|minister|model|"
    "musician|nanny|navigator|negotiator|nurse|nutritionist|officer|operator|optician|optometrist|organizer|"
    "organiser|owner|painter|paralegal|paramedic|parent|pastor|pharmacist|photographer|physician|physicist|"
    "physio|physiotherapist|pilot|planner|plumber|podcaster|poet|policeman|politician|porter|postdoc|priest|"
    "principal|producer|professor|programmer|psychiatrist|psychologist|publisher|rabbi|rancher|realtor|"
    "receptionist|recruiter|referee|rep|reporter|representative|researcher|retiree|roofer|sailor|salesman|"
    "saleswoman|salesperson|scientist|seamstress|secretary|sergeant|sheriff|shepherd|singer|sitter|smith|"
    "soldier|sonographer|specialist|statistician|steward|stewardess|stockbroker|student|stylist|superintendent|"
    "supervisor|surgeon|surveyor|swimmer|tailor|teacher|tech|technician|technologist|teller|therapist|trader|"
    "trainer|translator|trucker|trustee|tutor|undergrad|upholsterer|veteran|vet|videographer|volunteer|waiter|"
    "waitress|walker|welder|worker|writer|youtuber|zookeeper|"
    # students and ranks said bare
    r"phd(?: student| candidate)?|grad student|med student|resident|fellow|freshman|sophomore|"
    # initialisms said as a job, capitalised as written
    "(?-i:RN|LPN|CNA|EMT|PTA|OT|PT|NP|CPA|DJ|TA|RT|RRT|PA|CRNA)"
)
_MODIFIERS = r"(?:retired|former|ex-|semi-retired|first[- ]year|second[- ]year|\w+(?:st|nd|rd|th)[- ]year|new|newly)"
_NOT_LEAD = (r"(?:the|my|our|your|his|her|their|this|that|these|those|some|any|every|each|no|one|which|what|whose|"
             r"i|i'm|im|you|he|she|we|they|it|is|are|was|were|be|do|does|did|can|could|will|would|should|how|why|"
             r"when|where|who|if|so|and|but|or|hi|hey|hello|thanks|please|help|need|want|looking|anyone|ok|okay)")
# "bartender on frenchmen st in new orleans", "coast guard rescue swimmer", "retired high school
# principal", "PTA (physical therapist assistant) in Toledo": a noun phrase of at most six words
# whose last word before any "in/at/for/…" is a head, said first and standing alone
_NOT_BEFORE = (r"(?:for|to|of|a|an|the|with|from|in|at|on|by|my|your|our|their|his|her|about|and|or|vs|versus|"
               r"best|good|cheap|gift|gifts|ideas?|tips?|questions?|email|letter|message|note|resume|cv|interview|"
               r"salary|job|jobs|hiring|hire|become|becoming|being|need|find|finding|looking|i|i'm|im|me|we|you|he|"
               r"she|they|it|so|but|just|also|then|now|well|yeah|yes|no|aye|ok|okay|lol|hey|hi|is|are|was|am)")
# the place a role is held at holds no verb, no one else and no time: "Nurse at the clinic was rude",
# "Dentist on Monday", "Doctor at 3pm" tell of someone else or of an appointment
_NOT_AFTER = (r"\b(?:and|but|so|because|cause|who|which|that|my|our|your|me|he|she|they|him|her|them|us|we|"
              r"is|was|were|are|has|had|have|did|does|do|will|would|can|could|said|says|told|gave|got|went|came|"
              r"left|quit|won't|didn't|doesn't|isn't|wasn't|[a-z]+ed|monday|tuesday|wednesday|thursday|friday|"
              r"saturday|sunday|mon|tue|tues|wed|thu|thurs|fri|sat|sun|today|tonight|tomorrow|yesterday|"
              r"morning|afternoon|evening|noon|week|weekend|month)\b|\d")
HEADLINE = re.compile(
    rf"^(?!{_NOT_LEAD}\b)(?P<role>(?:an?\s+)?(?P<mod>{_MODIFIERS}\s+)?(?P<pre>(?:(?!{_NOT_BEFORE}\b)[a-z][\w&'/-]*\s+){{0,4}}?)"
    rf"(?:{_HEADS})s?)"
    rf"(?P<aside>\s*\([^()]{{1,60}}\))?"
    rf"(?P<where>\s+(?:in|at|for|on|from|with|out of|near)(?:\s+(?!{_NOT_AFTER})[^,.;:!?()\s]+){{1,8}}?)?"
    rf"(?=\s*(?:[,.;:!(—–]|\s-\s|\s(?:and|but|so)\b|$))", re.I)
# what a message asks of one who does the job, not what the speaker does: "wedding photographer
# in Austin, any recs?"
_SEEKING = re.compile(rf"\b(?:recs?|recommend\w*|suggest\w*|looking for|hire|hiring|know (?:a|any)|any good|cost|costs|"
                      rf"charge|charges|rates?|near me|should i (?:get|see|call|use|ask|pay|tip)|what (?:do|should) i ask|"
                      rf"how much (?:should|do|would|will) i|how much (?:does|do|is|are) (?:an?|one|it)|"
                      rf"(?:need|find|want|get) (?:an?|some|the) (?:\w+ ){{0,2}}(?:{_HEADS}))\b", re.I)


JOB_HEADS = _HEADS  # what `memlane.retrieval.slots` reads a job by


def with_article(role: str) -> str:
    """"a nurse", "an ER nurse", "a UX researcher": the article as the words are said (a
    capitalised initialism by its first letter's name)."""
    if re.match(r"^an?\s", role, re.I):
        return role
    if re.match(r"^[A-Z]{2,}\b", role):
        vowel = role[0] in "AEFHILMNORSX"
    else:
        vowel = role[:1].lower() in "aeio" or bool(re.match(r"^(?:u(?!ni|s[aeu]|ro)|hour|honest|heir)", role, re.I))
    return f"{'an' if vowel else 'a'} {role}"


def headline_role(text: str) -> str | None:
    """The role a message opens with, said as a headline ("motorcycle mechanic in austin" of
    "motorcycle mechanic in austin, mostly vintage hondas"), or None."""
    m = HEADLINE.match(text)
    if m is None or _SEEKING.search(text[m.end():].split("\n")[0][:200]):
        return None
    if not (m.group("mod") or m.group("pre") or m.group("aside") or m.group("where")):
        return None  # "Landlord, ugh. he won't fix the heat", "Mechanic, finally, fixed my car": someone else
    return re.sub(r"\s+here$", "", m.group().rstrip(), flags=re.I)  # "session guitarist in Nashville here"


__all__ = ["HEADLINE", "JOB_HEADS", "headline_role", "with_article"]
