"""Seed 002 §4 "话题切换时自动归档旧任务": which user turns change the subject, so that the
scratchpad's current task moves to the finished ones.

With an LLM (`session.topic_llm`, on in the progressive profile), the LLM judges each user turn
and names the task, as seed 002's compiler does (`topic_judge.Judge`, prompt
`memlane.llm.prompts.topic`). Offline, and for any turn the LLM fails on, the rules read a turn
in this order:
1. the turn is closing acts and nothing new (`memlane.closing`) — thanks, a verdict on the
   result, a decision, word that it works, a goodbye, the user's own next step with the result
   beside an acknowledgement ("好的谢谢", "that works, cheers", "ok calling the vet now", "行 我周末
   就去买土"), or a bare "收到" / "got it" after an answer — with no request, question or "but"
   → done; to an offer of more work ("Want me to add a subject line?") a yes or a bare verdict
   takes it on, and to a question an "ok" answers it;
2. it asks for a new thing of the task's kind ("再帮我做一个…PPT", "write a different email to my
   landlord") → switch, though it shares the task's words;
3. it goes back to a finished task — a request or a question sharing its words and not the
   current task's ("帮我把刚才那个减脂计划整理成表格") → switch;
4. it closes the task and asks for another ("简历先这样，帮我写封辞职信") → switch;
5. it points back into the task — a part of it ("第一页…", "the third slide"), an edit of what
   was made ("再改短一点", "make it more formal", "把…换成…"), a reference ("这个", "那第二天呢",
   "what about…"), a variant of what was offered ("有没有轻松一点的") → it continues, whatever
   words it shares;
6. it opens with a change of subject ("对了，…", "by the way", "换个话题", "还有个事", "while I'm at
   it", "back to…"), or with "now" and a request ("Got it. Now explain DNS") → switch; "另外…",
   "说到…", "hey…", "also…", or a frame naming nothing of the task ("in chess, …") only before a
   wh-question or a request, and "再问下…" before a question of any form ("再问下 邮箱的正则呢");
7. after an answer (the assistant asked nothing), a judgement of the result followed by a
   statement and nothing asked ("这版可以 不改了", "perfect, that's final", "ok I'm fried, enough
   for today") → done (`settles`); a statement or a yes/no question telling a new matter of the
   user's own — a thing of theirs its subject, an event of late, or one with the subject left
   out ("my wifi keeps dropping every evening", "最近跑完步右膝盖外侧疼", "got a blister on my
   heel") — that points back to nothing and shares less than `session.topic_shift_below` of its
   words with the task → switch (`reports_new_matter`);
8. the assistant asked a question, and the turn is no new request → it answers: continue;
9. a request (at its start, after what it is about: "my dad wants a toast too, can you write
   him one", with the subject left out: "also need a birthday invite text", or named by what it
   is to do: "regex to match a US phone number"), a wh-question about a thing of the user's own
   ("我的Python脚本报错，怎么解决"), or one that names another matter (`names_new_matter`:
   "单词怎么背效率最高" while choosing novels, "how do I undo a git commit" while plotting), of
   `session.topic_min_keywords` keywords or more sharing less than `session.topic_shift_below`
   of them with the current topic (the focus and the turns since it was set) → switch; anything else continues: a statement ("三年电商运营，会SQL
   和Python"), a yes/no question ("预算一万块够吗") or a wh-question in new words that points back,
   asks a size or a time of the task, or leaves out what it is about ("一天得晒几个小时太阳才够",
   "怎么跟中介开口", "how should I file Venmo payments") during a task gives, checks or asks its
   details ("几" after a verb opening its clause is "a few": "加几个话题标签" asks for more work).
With no focus, a request or a question however short, or any turn of a topic's size, starts one.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence

from memlane.closing import closes_task, closing_lead, closing_tail, offers_more, verdict_lead
from memlane.models import Scope, Scratchpad, Turn
from memlane.parts import Parts
from memlane.sessions import update_scratchpad
from memlane.text import CJK_RUN, cut, fts_terms, index_term, keywords
from memlane.topic_judge import TOPIC_TEXT_CHARS, Judge, Move

_TOPIC_TEXT_CHARS = TOPIC_TEXT_CHARS
# words of asking, not of a topic: "please help with X" and "please help with Y" share nothing
_ASKING = frozenset([
    "please", "help", "want", "need", "know", "tell", "thank", "thanks", "think", "question", "show",
    "give", "make", "use", "try", "today", "now", "also", "still", "best", "good", "way",
    "需要", "问题", "谢谢", "知道", "告诉", "觉得", "现在", "比较", "好的", "一下", "然后", "应该",
])
_CN_NUM = "一二三四五六七八九十两\\d"
_VARIANT_TEXT = r"[^\s，,。]{1,4}一?[点些]的"  # a variant of what was offered: "有没有轻松一点的"
# it points back into the task: a part of it, an edit of it, a reference to it
_CONTINUES = re.compile(
    rf"第[{_CN_NUM}]+(?:页|段|章|节|部分|点|条|步|天|个|张|行|题|封|版|道|周)|(?<![{_CN_NUM}])[{_CN_NUM}]+(?:页|段)"
    r"|^(?:那|那么)?(?:这|那)(?:个|些|段|页|里|样|封|道|篇|张)|^那[^\s，,。]{0,8}[呢吗]|它|上面|刚才|前面|后面那"
    r"|再(?:改|加|短|长|写|来|简|详|正式|精简|补充|调整|润色|优化)|改(?:成|为|一下|得)|换成|(?:加|补)(?:上|一|个|点|些)"
    r"|删(?:掉|除|了)|去掉|(?:短|长|简单|正式|口语化|简洁|详细|具体|活泼)(?:一)?点|用(?:[^\s，,。]{1,6})(?:色|字体|风格|语气)"
    r"|\b(?:the )?(?:first|second|third|fourth|fifth|sixth|last|next|other) (?:one|slide|page|paragraph|section|step|day|"
    r"point|part|line|question|email|version|item|option|course|bullet|chapter)s?\b"
    r"|^(?:and |so |ok,? |okay,? )?(?:what|how) about\b"
    r"|\bmake (?:it|this|that|them)\b|\b(?:shorter|longer|simpler|more (?:formal|casual|concise|detailed|friendly|polite)|"
    r"less (?:formal|casual))\b|^(?:can you |could you |please )?(?:add|remove|change|replace|rewrite|rephrase|shorten|"
    r"expand|fix|tweak|adjust|swap|drop|move|rename|translate) (?:it|this|that|them|the)\b"
    r"|\b(?:instead|as well)\b|^(?:it|this|that|they) (?:should|needs?|must|has to|have to|could|can)\b"
    # an instruction about the work at hand: what to say in it, stress, keep, sign it with
    r"|^(?:please )?(?:mention|include|emphasi[sz]e|highlight|stress|keep|sign|end with|start with|open with)\b"
    r"|^(?:再)?(?:强调|提一下|提到|写上|注明|突出|保留|结尾|开头)"
    # a variant of what was offered ("有没有轻松一点的", "便宜些的", "something non-fiction",
    # "anything cheaper?"), more of the same work ("再帮我写几个单元测试")
    rf"|{_VARIANT_TEXT}|^(?:something|anything|one|any)\s+(?:\w+er\b|more\b|less\b|non-)"
    r"|^(?:那|那么)?再(?:帮我|给我|教我|替我)", re.I)
# a variant asked for ("高级点的"): weaker than a cue of another matter said first ("对了 …能给我几个高级点的句子吗")
_VARIANT = re.compile(_VARIANT_TEXT)
# "趁这功夫问个别的": another question announced, wherever it stands
_ASK_OTHER = re.compile(r"问(?:个|点|一下|下)?别的(?:事|问题)?|\b(?:(?:an)?other|different|unrelated|separate) q(?:uestion)?\s*[:：]",
                        re.I)
# an acknowledgement a cue may follow: "Thanks! Totally unrelated, …", "明白了。对了，…"
_ACK = (r"(?:(?:ok(?:ay)?|thanks?(?: you)?|great|cool|got it|alright|sure|perfect|nice|hey|hmm|also|and|so|anyway|oh)"
        r"[,.!，。！\s]+|(?:好的|好吧|谢谢|明白了|知道了|行|嗯|哦|噢|啊|好)[,.!，。！\s]*){0,2}")  # "哦对了": no mark needed
# the cues that say the matter is another, wherever they stand ("…thanks man. unrelated but…")
_OTHER_MATTER = (r"(?:换个(?:话题|问题)|题外话|说点别的|聊点别的|(?:(?:totally |completely )?unrelated(?: question)?|"
                 r"(?:a |one |totally |completely )?different (?:question|topic|thing)|another (?:question|thing)|"
                 r"changing (?:the )?subject)\b)")
# a change of subject said as such, at the start of a message: a cue, or a return to an earlier
# subject ("back to planning", "说回…")
_SWITCH = re.compile(
    rf"^\s*{_ACK}(?:{_OTHER_MATTER}|(?:对了|顺便(?:问一下|问问|说一下)?|另外(?:我)?(?:想)?问|(?:再)?问个别的"
    r"|我还想问|说回|回到|还有(?:一)?(?:个|件)(?:事|问题))"
    r"|(?:by the way|btw|on another note|new (?:question|topic|task|project)|separate (?:question|thing)|"
    r"quick question|switching gears|while (?:i'?m|we'?re) at it|random question|speaking of|back to|moving on|next (?:project|topic|question|task))\b)",
    re.I)
# after a sentence, only those ("thanks. btw she's allergic to bees" may bring one more detail)
_SWITCH_AFTER = re.compile(rf"[.!?。！？]\s*{_ACK}{_OTHER_MATTER}", re.I)
# a new thing of the task's kind ("再帮我做一个…PPT", "另外写一封…", "write a different email",
# "make me a separate deck"): a new task though it shares the old one's words; not another
# version, draft or example of the same thing
_NEW_THING = re.compile(
    r"(?:另外|另|再)(?:帮我|给我|教我|替我)?(?:写|做|画|列|订|规划|设计|准备|整理|挑|选|找)(?:一)?(?:个|封|篇|份|套|本|首)(?!版|稿)"
    r"|还有(?:一)?(?:个|封|篇|份|件)[^，,。]{0,12}要"
    # "自我评价那段也帮我写个", "再来一道 鸡兔同笼…", "now one for the croissants": one more of the kind
    # "顺手也给我妈写一条": one for someone else
    r"|也(?:帮我|替我|给[^\s，,。]{1,3}?)?(?:写|做|画|列|出|挑|选)(?:一)?(?:个|封|篇|份|套|首|条)|再来(?:一)?(?:道|题)"
    r"|^\s*(?:(?:ok(?:ay)?|great|cool|thanks|and|now|also|next)[,!.\s]+){0,3}(?:one|another(?: one)?)\s+for\s+"
    r"(?:the|my|a|an|our|his|her|their)\b"
    r"|\b(?:write|make|draft|create|build|design|prepare|need|want)\s+(?:me\s+|us\s+)?"
    r"(?:(?:a|an)\s+(?:different|separate|second|whole new)|another)\s+"
    r"(?!version|draft|take|option|one\b|way|example|word|try|attempt|idea|wording|phrasing)"
    r"|\b(?:need|want|buy|get)\s+(?:a|an)\s+new\b", re.I)
# "now" and a request (after the task's references, so "now make it shorter" continues)
_NOW = re.compile(
    rf"^\s*{_ACK}(?:now|现在)[,，\s]*(?:(?:can|could|would) you\s+|please\s+|i need\b|i want\b|help me\b|"
    r"(?:write|explain|make|plan|tell|show|find|translate|recommend|draft|create|teach)\s+"
    r"(?!it\b|this\b|that\b|them\b|(?:me\s+|us\s+)?(?:more|again)\b)"
    r"|请|帮我|给我|教我|替我)", re.I)
# a question that opens a subject: a wh-question ("怎么升级", "how do I convert…"); a yes/no
# question ("预算一万块够吗", "so p=0.03 means…?") and a statement ("三年电商运营，会SQL和Python",
# "I got a conflict in README.md") check or add to what is under way
_QUESTION = re.compile(
    r"怎么|什么|为什么|如何|哪|多少|多久|多长|多大|多远|多高|啥|咋|几(?:[个天点种次号组岁年月周位]|\s*[？?。]?$)"
    r"|(?:^|[,.;:!?]\s*)(?:(?:also|and|so|ok|okay|oh|then)[,\s]+)?(?:what|how|why|where|when|which|who|whose)\b", re.I)
# "几" after a verb that opens the clause is "a few", not "how many": "加几个话题标签", "再写几句"
# ask for more of the work; "晒几天" does not open its clause, and "加几个好？" asks
_FEW = re.compile(r"(?:^|[，,。；;！!\s])(?:再|多|先|也)?(?:帮我|给我|替我)?[\u4e00-\u9fff]几(?:个|条|句|点|种|张|段|篇|行|页|样)")


def _wh(said: str) -> bool:
    """Whether `said` asks a wh-question (`_QUESTION`), "a few" aside."""
    found = [m for m in _QUESTION.finditer(said)
             if not (m.group().startswith("几") and not _ASKS.search(said) and _FEW.search(said[:m.end() + 1]))]
    return bool(found)


# A wh-question alone opens no subject: during a task most ask about it in new words ("一天得晒
# 几个小时太阳才够" while planting tomatoes, "how should I file Venmo payments" in a budget sheet).
# One about a thing of the user's own that the task does not name ("我的Python脚本报错…怎么解决",
# "my laptop is slow, how do I fix it?") does, and so does one naming another matter (below).
_OWN = re.compile(r"\b(?:my|our)\b|我的|我们的|我家|我们家", re.I)
# another matter opened beside the task ("另外我电脑上的Python版本太老了，怎么升级", "说到吃，
# 推荐一家…", "speaking of food, where…"): these cues switch only before a question or a
# request; "说到预算，我们最多五千" adds to the task (references into the task are read first)
_ASIDE = re.compile(rf"^\s*{_ACK}(?:另外(?:[，,\s]|我|还)|说到|说起|(?:再|还)(?:想)?(?:问|请教)(?:一下|下|个|一个)?|speaking of\b"
                    r"|(?:hey|hi|hello|also)\b)", re.I)
# "再问下…", "还想请教…": another question announced; it opens a matter whatever its form ("再问下
# 邮箱的正则呢" after a regex for phone numbers), unless it points back into the task (read first)
_ASK_MORE = re.compile(rf"^\s*{_ACK}(?:再|还)(?:想)?(?:问|请教)(?:一下|下|个|一个)?", re.I)
_QUESTION_END = re.compile(r"[吗呢么?？]\s*$")

# a question framed by what it is about ("in chess, how do I…", "关于社保，…怎么…"): a new matter
# when the frame names nothing of the current task
_FRAME = re.compile(r"^\s*(?:(?:in|for|with|about|regarding|re) ((?:[\w'-]+ ){0,3}[\w'-]+)\s*[,:]"
                    r"|(?!(?:follow|one|another|quick|last|final|small|simple|dumb|stupid|side|related|general|random|"
                    r"silly|short|easy|weird|same|next|other|my|a|the)\b)((?:[\w'-]+ ){0,2}[\w'-]+) (?:question|q)\s*[:：]"
                    # "typescript question: how do I…" (not "follow up question: what about…")
                    r"|关于([^，,。？?]{1,10})[，,：:]|([^，,。？?]{1,8})方面[，,：:])", re.I)


# a new request: what starts a task rather than answering the assistant's question about one
_REQUEST = re.compile(
    r"^(?:[^，,。！!]{0,6}[，,。！!]\s*){0,2}(?:现在|那|那再|再|另外|然后)?(?:请|麻烦(?:你)?)?(?:帮我|给我|教我|推荐|替我"
    r"|我想(?:让你|请你)|能不能帮)"
    r"|^(?![这那它])[\u4e00-\u9fff]{2,8}(?:帮我|麻烦你|请你)(?!看看|看下|看一下)"  # "论文题目帮我翻成英文": the thing first
    r"|^(?:[^,.!]{0,12}[,.!]\s*){0,2}(?:(?:now|also|ok|okay|and|so|then)\s+)?(?:(?:can|could|would) you|please|"
    r"help me|write|make|recommend|explain|tell me|show me|find|book|plan|suggest|translate|i need|i want)\b"
    # ...or asked after what it is about: "my dad wants a toast too, can you write him one"
    r"|[,;:.!]\s*(?:(?:so|and|then)\s+)?(?:(?:can|could|would) you|please|help me)\b"
    r"|[，,；;。！!]\s*(?:请|麻烦)?(?:帮我|帮忙|能不能帮|你能不能|可以帮我)"
    r"|^(?:(?:now|also|ok|okay|and|so|then)[,\s]+)?(?:need|want|looking for|i'?d like|i would like)\b"
    # a thing asked for by what it is to do, with no verb of asking: "regex to match a US phone
    # number", "a script to rename all my photos"; not a question ("is it safe to leave a…"), a
    # clause with a subject ("we used to…") or an "-ing" ("trying to decide between a…")
    r"|^(?:(?:now|also|ok|okay|and|so|then)[,\s]+)?(?!(?:is|are|was|were|do|does|did|can|could|should|would|will|"
    r"i|we|you|it|he|she|they|there|when|how|what|why|where|which|who)\b)(?:an? |some )?(?![a-z]*ing\b)"
    r"(?:[a-z-]+ ){0,2}(?!(?:way|need|want|have|has|going|able|ready|used|supposed|like|time)\b)[a-z-]+ to (?!be\b)[a-z]+ "
    r"(?:an?|the|my|our|some|all|every|any)\b", re.I)
_ASKS = re.compile(r"[?？]\s*$|[?？][^?？]{0,40}$")


# A wh-question in new words names a new matter only when it names something and does not point
# back (issue 30, the three labelled sets: such a turn was a follow-up 14 times of 21). It points
# back with a pronoun, a demonstrative, "the", "每块" (each piece of what is at hand)...
_BACK = re.compile(r"它|这|那|其|每[个块片次天条张页段]"
                   r"|\b(?:it|its|this|that|these|those|them|they|the|one|ones|each|there)\b", re.I)
# ...asks a size, a time, an amount of what is at hand ("每块多大合适", "发芽以后多久施一次肥", "how long")...
_ATTRIBUTE = re.compile(
    r"多(?:大|久|长|高|远|少|厚|宽|深|重|粗)|几(?:个)?(?:小时|天|次|分钟|遍|组|周|个月)|什么时候"
    r"|\bhow (?:long|much|many|big|often|far|tall|wide|deep|hot|cold|thick)\b"
    r"|\bwhat (?:size|time|temperature|pace)\b", re.I)
# ...or what to do in a circumstance of it ("晚饭经常在外面吃怎么办", "what if it rains?"); "准备啥吗"
# asks yes or no ("anything to prepare?")
_CIRCUMSTANCE = re.compile(r"怎么办|咋办|\bwhat if\b|(?:什么|啥|哪)[^，,。？?\s]{0,2}吗", re.I)
# A Chinese question leaves out what it is about when its clause opens with the question word or a
# preposition ("怎么跟中介开口", "对普通人的日常生活有什么影响"): the subject is the task at hand.
_CLAUSE = re.compile(r"[，,。；;！!？?\s]+")
_WH_ZH = re.compile(r"怎么|怎样|如何|为什么|什么|啥|咋|哪|多少|几")
_PREPOSITION = re.compile(r"对|跟|和|与|在|从|给|用|把|被|比|向|往")
# An English one names a new thing with "a"/"an" or sets it in the here and now ("how do I undo a git
# commit", "what should I cook for dinner tonight"); one naming nothing so ("how should I file Venmo
# payments") asks about the task in new words.
_NEW_EN = re.compile(r"\b(?:an?|tonight|today|tomorrow|this (?:morning|afternoon|evening|weekend))\b", re.I)


# A judgement of the result followed by a statement closes the task ("这版可以 不改了", "perfect,
# that's final", "ok I'm fried, enough for today", "好 已经发出去了"): nothing new is asked, so
# no question, request, edit, "but" or (Chinese) "a bit more", "again", "want" ("好 大一点", "行 再短些")...
# An English statement opens with a subject, a "not" or an "-ing" ("we're buying seeds this
# weekend", "not taking it in then", "adding the indexes now"), not with a bare verb ("great, add a
# conclusion"): without that condition topics.json keeps 0.98 of its follow-ups, not 1.00.
_EN_SUBJECT = re.compile(r"(?<![a-z'])(?:i|i'm|i've|i'll|im|ive|we|we're|we've|we'll|it|it's|that's|thats|this|this is|they|they're|he|she"
                         r"|he's|she's|everything|all|not|no|already|just|[a-z]+ing)\b", re.I)
_ZH_ORDER = re.compile(r"一点|一些|点儿|再|还|也要|要|想|得|帮|请|给我")
# ...nor a fault found or more brought ("好，就是有点长", "行吧 就这样写不太好", "ok, adding more
# context: the client is in Berlin")
_BUT = re.compile(r"\b(?:but|though|however|still|too|more)\b|[:：]|但|不过|可是|有点|太(?!感谢|谢谢|好了|棒|赞|完美|牛|厉害|给力)"
                  r"|不(?:太|够|好|行|对|怎么)|(?<!不)错(?!过)", re.I)  # "太感谢了" is no fault found; "写错了" is


def settles(said: str) -> bool:
    """Whether a turn judges the result (`verdict_lead`) and then only says something (see above)."""
    lead = verdict_lead(said)
    rest = said[lead:].strip(" ,.;:!，。；：！、~…")
    if not lead or not rest or re.fullmatch(r"(?:not|no)\W*", rest, re.I) or _ASKS.search(said) or _wh(rest) \
            or re.search(r"[吗呢么]\s*$", rest) \
            or _REQUEST.search(rest) or _CONTINUES.search(rest) or _BUT.search(rest):
        return False
    if not CJK_RUN.search(rest):
        return _EN_SUBJECT.match(rest) is not None
    return not _ZH_ORDER.search(rest)


# The user says what they did or will now do with the result, and asks nothing: "fp-10 + an x
# stand, ordered", "ok one more week then", "alright, trap's set", "好 加上了 明早发", "那我问问别家再说",
# "打了格力售后 明天上门", or says anything of it and ends by thanking ("she loves it thx!!",
# "提交了 说三个工作日审核 谢了": in the seven labelled sets, 35 of the 35 user turns ending in thanks
# closed the task). A bare report of what was done without an acknowledgement, a next step or
# thanks ("我打了疫苗") tells the task's circumstances.
_STEP_EN = re.compile(r"\b(?:ordered|sent|booked|bought|signed up|set|done|on it|dig it out)[\s.!]*\W*$"
                      r"|(?:^|[.!]\s+|^(?:ok(?:ay)?|alright|all right|sure|great)[,\s]+)(?:we'll|i'll|will) (?:do|try|take|use) "
                      r"(?:that|this|it)[\s.!]*\W*$"
                      r"|^\W*(?:ok|okay|alright|fine|fair|cool|got it)\b.*\bthen[\s.!]*\W*$", re.I)  # "cut it then": asked
_STEP_ZH = re.compile(r"再说[吧了]?\W*$|我(?:这就|先|就)?去(?!问|找|查|确认|核实|商量|看看|试试)[\u4e00-\u9fff]{1,4}了\W*$|^(?:好|行|嗯|懂了|收到|ok|那)[\s，,]*\S{0,8}?(?:发|加|说|打|买|订|约|交|报|弄|改|跟)"
                      r"\S{0,8}?了|(?:发|加|说|打|买|订|约|交)(?:过去|上|好|完)?了[\s，,]+\S{0,8}(?:明早|明天|等|先|回头)", re.I)
# …but not one that asks the assistant for more or tells of a snag: "好 我改了一下 你再看看", "嗯 我跟他说了 他不同意"
_STEP_ZH_NOT = re.compile(r"你|还没|再(?!说[吧了]?\W*$)|但|[他她]们?(?:说|不|没)|没有?(?:回|用|反应|动静)")
_THANKS_END = re.compile(r"(?:\b(?:thanks|thank you|thx|ty|tysm|cheers)(?:[\s,]+(?:really|so much|a lot|again|man|dude|"
                         r"buddy|mate|dear|coach|bro|friend|doc|fam))?|谢了|谢谢|多谢|谢啦|感谢)[\s!！.。~～]*\W*$", re.I)
# ...or ends with a cheer ("找到了 👌", "down from 2.1s to 800ms 🎉", "sent it to her ❤️": in the eight
# labelled sets, 30 of the 30 user turns ending so, asking nothing, closed the task)
_CHEER_END = re.compile(r"(?:👌|👍|🎉|🚀|❤️|❤|🙌|🙏|✅|💪|🥳|😍|🤘|✌️|✌)[\s!！.。~～]*$")
_NOT_EN = re.compile(r"\b(?:not|never|no)\b|n't", re.I)  # "I'm not done", "not ordered yet, thx"
# a thanks or a cheer after a snag, a wish or a negation closes nothing: "换了信道还是掉 谢谢", "now it
# throws a 500 🎉", "not ordered yet, thx", "any ideas under 30 thanks", "字数控制在50字以内 先谢了"
_SNAG = re.compile(r"\b(?:still|again|fail\w*|error\w*|broke\w*|slower|worse|crash\w*|wrong|yet|any ideas|"
                   r"in advance|now it|brb|be right back)\b|还是|还没|又(?!好)|没(?!问题|事)|不(?!错|客气|用)|先谢|掉线|报错|出错|坏了|慢"
                   r"|[吗呢][\s，,。]", re.I)  # "还有酒店推荐吗 谢谢": it asked, then thanked ahead
_STEP_CHARS = 60
_THANKED_CHARS = 90  # a turn ending in thanks may say a little more of what the user will do


def steps_off(said: str) -> bool:
    """Whether a turn only says what the user did or will do with the result (see above)."""
    # "…I'll try the strap and some rest first. Thank you, dear." (not "…then send you my table to check, thanks")
    thanks = _THANKS_END.search(said)
    long_thanks = thanks is not None and not re.search(r"\b(?:you|your|then|later|back)\b|你|再|回头", said[:thanks.start()], re.I)
    if len(said) > (_THANKED_CHARS if long_thanks else _STEP_CHARS) or _ASKS.search(said) or _wh(said) or _REQUEST.search(said) \
            or _CONTINUES.search(said) or _BUT.search(said) or _NOT_EN.search(said):
        return False
    return bool(_STEP_EN.search(said) or (_STEP_ZH.search(said) and not _STEP_ZH_NOT.search(said))
                or ((_THANKS_END.search(said) or _CHEER_END.search(said)) and not _SNAG.search(said)))


def ends_closing(said: str, answering: bool = False) -> bool:
    """Whether a turn ends by thanking, deciding or saying it is final (`closing_tail`) after
    words that ask nothing, want nothing more and tell no snag; answering the assistant's
    question, a thanks after the answer closes nothing ("I only have 5mm, thanks")."""
    if len(said) > _STEP_CHARS:
        return False
    tail = closing_tail(said, answering)
    head = said[:tail]
    return bool(tail) and not (
        _ASKS.search(said) or _wh(head) or _REQUEST.search(head) or _CONTINUES.search(head) or _BUT.search(head)
        or _NOT_EN.search(head) or _SNAG.search(said) or re.search(r"[吗呢么][\s，,。.!！~～]*$", head))


# A statement or a yes/no question tells of a new matter when a thing of the user's own is its subject
# ("my wifi keeps dropping every evening", "my insurance renewal went up 30%"), when it tells an
# event of late ("最近跑完步右膝盖外侧疼", "lately I can't sleep") or one with the subject left out
# ("got a blister on my heel"), and it points back to nothing ("it", "这", "那"). "I"/"我" alone
# does not do: in the four labelled sets "I'm on an M2 mac", "我家只有不粘锅", "I got a conflict
# in README.md" give the task's circumstances (11 of 11 such turns were follow-ups).
_REPORT = re.compile(r"^(?:(?:so|also|and|ugh|hey|oh|well|btw)[,\s]+)?(?:(?:my|our|lately|recently)\b|got an?\b)"
                     r"|^(?:我的|我们的|最近|这几天|前几天)", re.I)
_POINTS = re.compile(r"它|这|那|其|\b(?:it|its|this|these|those|them|they|there)\b", re.I)


def reports_new_matter(said: str) -> bool:
    """Whether a statement or a yes/no question tells of a new matter of the user's (see above)."""
    return not _wh(said) and not _POINTS.search(said) and _REPORT.search(said) is not None


def names_new_matter(said: str) -> bool:
    """Whether a wh-question in words new to the task asks about another matter (see above)."""
    if not _wh(said) or _BACK.search(said) or _ATTRIBUTE.search(said) or _CIRCUMSTANCE.search(said):
        return False
    if not CJK_RUN.search(said):
        return _NEW_EN.search(said) is not None
    for clause in _CLAUSE.split(said):
        wh = _WH_ZH.search(clause)
        if wh and (wh.start() == 0 or _PREPOSITION.match(clause)):
            return False
    return True


def topic_terms(text: str) -> set[str]:
    """The words a turn's topic is made of: keywords as the index stores them (Latin stems,
    CJK bigrams); single CJK characters (好, 吃) say too little about a topic to count."""
    terms = fts_terms(w for w in keywords(text[:_TOPIC_TEXT_CHARS]) if w not in _ASKING)
    return {t if CJK_RUN.fullmatch(t) else index_term(t) for t in terms if not CJK_RUN.fullmatch(t) or len(t) > 1}


def topic_move(text: str, terms: set[str], vocabulary: set[str], min_keywords: int, shift_below: float,
               answering: bool = False, offered: bool = False, finished: set[str] | None = None,
               name_chars: int = 12, reply: str = "") -> Move:
    """What a user turn does to the current topic (the module docstring's rules); `answering`:
    the assistant's last turn asked something, and a turn that is no new request answers it;
    `offered`: what it asked was an offer of more work (`offers_more`); `finished`: the words of
    the finished tasks, which a request or a question going back to one of them shares;
    `name_chars`: `session.topic_closing_name_chars`; `reply`: the assistant's last turns, whose
    options a closing turn may take by name."""
    said = " ".join(text[:_TOPIC_TEXT_CHARS].split())
    if closes_task(said, offered=offered, asked=answering, reply=reply):
        return "done"
    other = _ASK_OTHER.search(said)  # "…趁这功夫问个别的", not "我不想问个别的", "别问别的了"
    if _NEW_THING.search(said) or (other and not re.search(r"(?:不|别|没|不要|不想|不用)$", said[:other.start()])):
        return "switch"
    # back to a finished task ("帮我把刚才那个减脂计划整理成表格" while choosing a restaurant): its words,
    # none of the current task's, in a request or a question
    if finished and terms and vocabulary and len(terms & finished) / len(terms) >= shift_below \
            and len(terms & vocabulary) / len(terms) < shift_below \
            and (_REQUEST.search(said) or _wh(said)):
        return "switch"
    if lead := closing_lead(said, name_chars):  # "简历先这样，帮我写封辞职信": the task closed, a new one asked for
        rest = said[lead:].lstrip(" ,.;:!，。；：！、")
        rest_terms = topic_terms(rest)
        if _REQUEST.search(rest) and not _CONTINUES.search(rest) and len(rest_terms) >= min_keywords \
                and len(rest_terms & vocabulary) / len(rest_terms) < shift_below:
            return "switch"
        if _SWITCH.search(rest) and (_wh(rest) or _ASKS.search(rest) or re.search(r"问|[吗呢]\s*$|\?", rest)):
            return "switch"  # "就这版了 谢了 顺便问下 明天杭州下雨吗"; not "好的谢谢，顺便把标题也改一下" (more of it)
        if re.match(r"\W*(?:anyway|anyways|btw|by the way|on another note)\b(?![\s,]+(?:it|this|that|they|these|those)\b)",
                    rest, re.I) and len(rest_terms) >= min_keywords and len(rest_terms & vocabulary) / len(rest_terms) < shift_below:
            return "switch"  # "privacy screen it is 😂 anyway tasted the kombucha on day 9": the next matter
    if _SWITCH.search(said) and not _CONTINUES.search(_VARIANT.sub(" ", said)) and len(terms) >= min_keywords \
            and (not vocabulary or len(terms & vocabulary) / len(terms) < shift_below) \
            and (_wh(said) or _ASKS.search(said) or _REQUEST.search(said) or _QUESTION_END.search(said)):
        return "switch"  # "哦对了 …能给我几个高级点的句子吗": the cue first, a variant asked of the new matter
    if _CONTINUES.search(said):
        return "continue"
    if _SWITCH.search(said) or _SWITCH_AFTER.search(said) or _NOW.search(said):
        return "switch"
    requested = _REQUEST.search(said) is not None
    if _ASIDE.search(said) and (requested or _wh(said)):
        return "switch"
    if _ASK_MORE.search(said) and _QUESTION_END.search(said):
        return "switch"
    if (frame := _FRAME.match(said)) and (requested or _wh(said)):
        named = topic_terms(next(g for g in frame.groups() if g))
        if vocabulary and named and not named & vocabulary:
            return "switch"
    if not offered and (ends_closing(said, answering) or not answering and (settles(said) or steps_off(said))):
        return "done"
    if not answering and not requested and vocabulary and len(terms) >= min_keywords \
            and len(terms & vocabulary) / len(terms) < shift_below and reports_new_matter(said):
        return "switch"
    if answering and not requested:
        return "continue"
    if len(terms) >= min_keywords and (not vocabulary or len(terms & vocabulary) / len(terms) < shift_below) \
            and (requested or (_wh(said) and (_OWN.search(said) or (vocabulary and names_new_matter(said))))):
        return "switch"
    return "continue"


def opens_topic(text: str, terms: set[str], min_keywords: int) -> bool:
    """With no current topic, whether a user turn starts one: a turn of a topic's size, or a
    request or a question however short ("教我做红烧肉", "plan a trip", "how do I make a guest
    network")."""
    said = " ".join(text[:_TOPIC_TEXT_CHARS].split())
    return bool(terms) and (len(terms) >= min_keywords or _REQUEST.search(said) is not None
                            or _wh(said) or (_ASK_MORE.search(said) is not None and _QUESTION_END.search(said) is not None))


def track_topic(memory: Parts, scope: Scope, session_id: str, turns: Sequence[Turn]) -> Scratchpad | None:
    """Follow the topic through `turns`: a switch makes a new focus and moves the old one to the
    finished tasks (timestamped, the last 5 kept); done moves it there and leaves no focus.

    With `session.topic_llm` and an LLM, the LLM judges each user turn and names the new task
    (seed 002's compiler, `Judge`); otherwise, and wherever it fails, `topic_move` decides and
    the turn, cut, is the new focus. With no focus, a task the LLM names, or a turn that
    `opens_topic`, sets it. Returns the new scratchpad when it changed."""
    cfg = memory.config.session
    if cfg.topic_shift_below is None or not any(t.role == "user" for t in turns):
        return None
    session = memory.store.get_session(scope, session_id)
    if session is None:
        return None
    pad = memory.store.get_scratchpad(scope)
    focus = pad.current_focus if pad else ""
    since = int(session.metadata.get("topic_since_seq", 0))
    first = min(t.seq for t in turns)
    earlier = memory.store.get_turns(scope, session_id=session_id, newest_first=True,
                                     limit=cfg.topic_context_turns + len(turns))
    recent = [t for t in earlier[::-1] if t.seq < first][-cfg.topic_context_turns:] if cfg.topic_context_turns else []
    context: deque[set[str]] = deque(
        (topic_terms(t.content) for t in recent if t.seq >= since), maxlen=cfg.topic_context_turns)
    focus_terms = topic_terms(focus)
    # the finished tasks' words: a turn going back to one of them leaves the current task
    finished = set().union(*(topic_terms(str(d.get("task", ""))) for d in (pad.recent_tasks if pad else [])))
    changes: list[tuple[Move, str]] = []
    asked = bool(recent) and recent[-1].role == "assistant" and _ASKS.search(recent[-1].content) is not None
    # what the assistant said in this task: the options a closing turn may take by name ("那就千岛湖")
    replies: deque[str] = deque((t.content for t in recent if t.role == "assistant" and t.seq >= since),
                                maxlen=max(1, cfg.topic_context_turns // 2))
    offered = asked and offers_more(recent[-1].content)
    ordered = sorted(turns, key=lambda t: t.seq)
    judge = Judge.of(memory, [t.seq for t in ordered if t.role == "user"])
    for t in ordered:
        terms = topic_terms(t.content)
        if t.role == "user":
            verdict = judge.verdict(focus, recent, t) if judge else None
            if verdict is None:  # offline, or the LLM failed: the rules, and the turn names the task
                move = topic_move(t.content, terms, focus_terms.union(*context) if focus else set(),
                                  cfg.topic_min_keywords, cfg.topic_shift_below, answering=asked and bool(focus),
                                  offered=offered, finished=finished - focus_terms,
                                  name_chars=cfg.topic_closing_name_chars,
                                  reply="\n".join(replies))
                task = cut(" ".join(t.content.split()), cfg.focus_chars)
                # a closing turn ("thanks, I'll send it to my boss tomorrow") starts no task; after
                # one, whatever the user brings up next is the next task ("年会我们部门要出个节目")
                starts = not focus and move != "done" and opens_topic(
                    t.content, terms, 1 if since else cfg.topic_min_keywords)
            else:
                move, task = verdict
                starts = not focus and bool(task) and move != "done"
            if move in ("done", "switch") and focus:
                finished |= focus_terms
            if move == "done" and focus:
                changes.append(("done", focus))
                focus, focus_terms, since = "", set(), t.seq + 1
                context.clear()
                replies.clear()
            elif (move == "switch" and task) or starts:
                focus = task
                changes.append(("switch", focus))
                focus_terms, since = terms | topic_terms(task), t.seq
                context.clear()
                replies.clear()
        if cfg.topic_context_turns:
            context.append(terms)
            recent = [*recent, t][-cfg.topic_context_turns:]
        asked = t.role == "assistant" and _ASKS.search(t.content) is not None
        offered = asked and offers_more(t.content)
        if t.role == "assistant":
            replies.append(t.content)
    if not changes:
        return None
    with memory.store.transaction():
        current = memory.store.get_session(scope, session_id) or session
        current.metadata["topic_since_seq"] = since
        memory.store.put_session(current)
    for move, text in changes:  # each older focus becomes a finished task in turn
        pad = update_scratchpad(memory, scope, focus=None if move == "done" else text,
                                done=text if move == "done" else None)
    return pad

