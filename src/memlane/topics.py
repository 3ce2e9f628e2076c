"""Seed 002 §4 "话题切换时自动归档旧任务": which user turns change the subject, so that the
scratchpad's current task moves to the finished ones.

With an LLM (`session.topic_llm`, on in the progressive profile), the LLM judges each user turn
and names the task, as seed 002's compiler does (`Judge`, prompt `memlane.llm.prompts.topic`).
Offline, and for any turn the LLM fails on, the rules read a turn in this order:
1. the turn is closing acts and nothing new — thanks, a verdict on the result, a decision, the
   intent to use it, word that it works, a goodbye ("好的谢谢", "完美，就用这个了", "that works,
   cheers", "ok I'll send it now", "👍") — with no request, question or "but" → done; to an
   offer of more work ("Want me to add a subject line?") a yes or a bare verdict takes it on;
2. it asks for a new thing of the task's kind ("再帮我做一个…PPT", "write a different email to my
   landlord") → switch, though it shares the task's words;
3. it points back into the task — a part of it ("第一页…", "the third slide"), an edit of what
   was made ("再改短一点", "make it more formal", "把…换成…"), a reference ("这个", "那第二天呢",
   "what about…"), a variant of what was offered ("有没有轻松一点的") → it continues, whatever
   words it shares;
4. it opens with a change of subject ("对了，…", "by the way", "换个话题", "back to…"), or with
   "now" and a request ("Got it. Now explain DNS") → switch; "另外…" / "说到…" only before a
   question or a request;
5. the assistant asked a question, and the turn is no new request → it answers: continue;
6. a request or a wh-question ("怎么升级", "how do I…", not about "it") of
   `session.topic_min_keywords` keywords or more sharing less than `session.topic_shift_below`
   of them with the current topic (the focus and the turns since it was set) → switch; anything
   else continues: a statement ("三年电商运营，会SQL和Python") or a yes/no question ("预算一万块
   够吗") during a task gives or checks its details.
With no focus, a request however short, or any turn of a topic's size, starts one.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import unicodedata
from collections import deque
from collections.abc import Sequence
from typing import Any, Literal

from memlane.config import SessionConfig
from memlane.errors import BackendError
from memlane.llm import LLM, ChatMessage
from memlane.llm.prompts.topic import topic_prompt
from memlane.models import Scope, Scratchpad, Turn
from memlane.parts import Parts
from memlane.sessions import update_scratchpad
from memlane.text import CJK_RUN, cut, estimate_tokens, fts_terms, index_term, keywords, language_of

Move = Literal["continue", "switch", "done"]
log = logging.getLogger(__name__)

_TOPIC_TEXT_CHARS = 2000  # not from a seed: a turn's first 2000 characters speak for its topic
_CLOSING_CHARS = 300  # not from a seed: a turn that closes a task is short; a longer one brings more
# words of asking, not of a topic: "please help with X" and "please help with Y" share nothing
_ASKING = frozenset([
    "please", "help", "want", "need", "know", "tell", "thank", "thanks", "think", "question", "show",
    "give", "make", "use", "try", "today", "now", "also", "still", "best", "good", "way",
    "需要", "问题", "谢谢", "知道", "告诉", "觉得", "现在", "比较", "好的", "一下", "然后", "应该",
])
_CN_NUM = "一二三四五六七八九十两\\d"
# it points back into the task: a part of it, an edit of it, a reference to it
_CONTINUES = re.compile(
    rf"第[{_CN_NUM}]+(?:页|段|章|节|部分|点|条|步|天|个|张|行|题|封|版|道|周)|[{_CN_NUM}]+(?:页|段)"
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
    r"|[^\s，,。]{1,4}一?[点些]的|^(?:something|anything|one|any)\s+(?:\w+er\b|more\b|less\b|non-)"
    r"|^(?:那|那么)?再(?:帮我|给我|教我|替我)", re.I)
# an acknowledgement a cue may follow: "Thanks! Totally unrelated, …", "明白了。对了，…"
_ACK = (r"(?:(?:ok(?:ay)?|thanks?(?: you)?|great|cool|got it|alright|sure|perfect|nice|hey|hmm|"
        r"好的|好吧|谢谢|明白了|知道了|行|嗯|哦)[,.!，。！\s]+)?")
# a change of subject said as such, at the start of a message: a cue, or a return to an earlier
# subject ("back to planning", "说回…")
_SWITCH = re.compile(
    rf"^\s*{_ACK}(?:对了|顺便(?:问一下|问问|说一下)?|换个(?:话题|问题)|另外(?:我)?(?:想)?问|问个别的|题外话|说点别的|聊点别的|我还想问"
    r"|说回|回到"
    r"|by the way|btw|on another note|(?:totally |completely )?unrelated(?: question)?|(?:a |one )?different (?:question|topic|thing)|"
    r"another (?:question|thing)|changing (?:the )?subject|new (?:question|topic|task)|separate (?:question|thing)|quick question"
    r"|switching gears|random question|speaking of|back to)\b", re.I)
# a new thing of the task's kind ("再帮我做一个…PPT", "另外写一封…", "write a different email",
# "make me a separate deck"): a new task though it shares the old one's words; not another
# version, draft or example of the same thing
_NEW_THING = re.compile(
    r"(?:另外|另|再)(?:帮我|给我|教我|替我)?(?:写|做|画|列|订|规划|设计|准备|整理)(?:一)?(?:个|封|篇|份|套|本|首)(?!版|稿)"
    r"|还有(?:一)?(?:个|封|篇|份|件)[^，,。]{0,12}要"
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
    r"怎么|什么|为什么|如何|哪|多少|几[个天点种次]"
    r"|(?:^|[,.;:!?]\s*)(?:what|how|why|where|when|which|who|whose)\b", re.I)
# ...unless what it asks about is the thing at hand, named by a pronoun ("how do I run it every
# night?"), with nothing of the user's own introduced ("my laptop is slow, how do I fix it?")
_ABOUT_IT = re.compile(r"^(?!.*\b(?:my|our)\b).*\b(?:it|them|this one|that one)\b", re.I)
# another matter opened beside the task ("另外我电脑上的Python版本太老了，怎么升级", "说到吃，
# 推荐一家…", "speaking of food, where…"): these cues switch only before a question or a
# request; "说到预算，我们最多五千" adds to the task (references into the task are read first)
_ASIDE = re.compile(rf"^\s*{_ACK}(?:另外(?:[，,\s]|我|还)|说到|说起|speaking of\b)", re.I)


# a new request: what starts a task rather than answering the assistant's question about one
_REQUEST = re.compile(
    r"^(?:[^，,。！!]{0,6}[，,。！!]\s*){0,2}(?:现在|那|那再|再|另外|然后)?(?:请|麻烦(?:你)?)?(?:帮我|给我|教我|推荐|替我"
    r"|我想(?:让你|请你)|能不能帮)"
    r"|^(?:[^,.!]{0,12}[,.!]\s*){0,2}(?:(?:now|also|ok|okay|and|so|then)\s+)?(?:(?:can|could|would) you|please|"
    r"help me|write|make|recommend|explain|tell me|show me|find|book|plan|suggest|translate|i need|i want)\b", re.I)
_ASKS = re.compile(r"[?？]\s*$|[?？][^?？]{0,40}$")


# ---- rule 1: the task is finished --------------------------------------------------------------
# A turn finishes the task when it is made of closing acts and nothing else: thanks, a verdict on
# the result, a decision, the intent to use the result, word that it works now, a goodbye, with
# acknowledgements ("ok", "好的", "嗯") around them. The turn is read act by act (`_acts`); any
# stretch that is no act (a request, an edit, a question, "but…", a complaint) keeps the task
# going, so "great, now make it shorter" and "好的，再加一页" continue. Each act is a small
# grammar — [subject] [adverbs] verb [object], [degree] adjective [particles] — not a list of
# sentences. The turn is NFKC-folded and lowercased first; an English act ends at a word's end.

_IT = (r"(?:this one|that one|this version|that version|all of them|both|them|those|these|this|that|it)")
# one of the options offered: "the blue one", "option B", "the second pair"
_CHOICE = (r"(?:option \w+|the (?:[\w-]+ )?(?:ones|one|option|version|draft|pair|plan|set|model|package|deal|room|"
           r"flight|ticket|hotel)|the (?:first|second|third|fourth|fifth|last|other|cheaper|cheapest|bigger|"
           r"smaller|lighter) [\w-]+)")
# a thing the assistant made, named: "I'll send the email now"
_MADE = (r"the (?:email|draft|letter|message|reply|post|note|text|doc|document|file|code|fix|patch|script|"
         r"query|recipe|plan|list|slides|deck|outline|summary|report|itinerary|schedule|template|version|copy)")
_USE_VERB = (r"(?:use|send|submit|post|print|share|forward|present|run|try|test|deploy|merge|push|apply|paste|"
             r"copy|cook|make|bake|read|publish|implement|sign|email|mail|upload|install|show|give|book|"
             r"order|buy|file|frame|hand)")
# a word of a tail ("…send it to my boss tomorrow"); these start a new matter instead ("I'll try it
# but…", "I'll send you the data" — the assistant has more to do)
_TAIL = (r"(?!(?:but|though|however|if|unless|what|how|why|when|where|which|can|could|would|please|you|your|and)\b)"
         r"[\w'@.$-]+")
# …and after "thanks for", where "now" or "also" starts a request ("thanks for that now add…")
_FOR = r"(?!(?:now|also|next|then|make|add|change|can|could|would|please|but|and)\b)[\w'-]+"
_I_WILL = r"(?:i'?ll|i will|i'?m gonna|i'?m going to|gonna|going to|i can|let me|time to|off to|i'?m off to|will)"
_SO = r"(?:really|very|so|super|pretty|just|absolutely|totally|quite|real|much|way|all|damn)"
_GOOD = (r"(?:perfect|great|good|fine|awesome|excellent|amazing|brilliant|fantastic|wonderful|lovely|nice|cool|"
         r"neat|sweet|superb|solid|clear|beautiful|gorgeous|spot on|better|ideal|helpful|useful|terrific|"
         r"outstanding|clean|legit|fab|fabulous|incredible|impressive|top notch|on point)")
_ZH_END = r"(?:了|的|啊|呀|哦|嘞|啦|哈|呢|耶|嘛|哇|咯|吧)"  # sentence-final particles
_ZH_DEG = r"(?:真的|真|太|很|非常|挺|蛮|超级|超|特别|相当|简直|十分|好|还挺|更)"  # degree adverbs
# what a Chinese verdict is about: "这版很好", "写得真好", "我很满意"
_ZH_ON = (r"(?:这个|这样|这版|这次|这些|这篇|这份|现在这样|现在|这|它|写得|做得|改得|讲得|说得|解释得|整理得|总结得|翻译得"
          r"|安排得|规划得|效果|看起来|感觉|我觉得|我)")
# what a Chinese decision picks: 这个, 这版, 第二个
_ZH_PICK = (r"(?:这一版|这个|这款|这家|这版|这些|这套|这条|这篇|这份|它"
            r"|第[一二三四五六七八九十两\d]+(?:个|款|种|家|版|套|条|篇|双|件|张|份))")
# what may follow a Chinese verb of use: the thing, a particle, a direction, "给老板" (not "给我")
_ZH_OBJ = (r"(?:这个|它|这版|这些|这款|这家|这篇|这份|了|吧|啦|看|试|一下|去|起来|着|上|出去|过去|下来"
           r"|给(?:(?![再还帮你我吗呢但])[\u4e00-\u9fff]){1,6})")

# each act: (English alternatives, Chinese alternatives); the longest alternative wins at each point
_GRAMMAR: dict[str, tuple[list[str], list[str]]] = {
    # acknowledgements and interjections: they close nothing alone ("ok" answering a question)
    "ack": ([r"ok(?:ay|ey|ie)?", "k+", "alright", "all right", "right", "oh", "ah+", "aha", "wow", "whoa", "hmm+",
             "hm", "um+", "got it", "gotcha", "i see", "understood", "noted", "makes sense", "fair enough", "lol",
             "lmao", "ha(?:ha)+", "he(?:he)+", "heh", "well", "oh well", "man", "dude", "mate", "buddy", "bro",
             "no", "nope", "nah", "then", "so", "and", "again", "phew", "whew", "omg", "yay", "woo+", "ooh",
             "indeed", "exactly"],  # "exactly" confirms ("so you mean…?"); it judges nothing
            [r"好(?:的|滴|哒|嘞|吧|好)*", r"嗯+(?:呢|好)?", "哦+", "噢", "喔", "哇塞?", "诶", "欸", "唔", "收到(?:了)?",
             "明白(?:了)?", "知道(?:了)?", "懂(?:了)?", "了解(?:了)?", "行吧?", "可以", "对(?:的|对)?", "是的", "哈+",
             "嘿嘿", "嘻嘻", "呵呵", "那好", "那行", "那", "不用", "不要", "没有", "不了", "亲", "ok", _ZH_END]),
    # a yes: to an offer of more work ("Want me to add a subject line?") it takes the work on
    "yes": (["yes", "yeah", "yep", "yup", "ya", "yea", "sure", "of course", "absolutely", "definitely", "please do",
             "go ahead", "why not", r"let'?s do (?:it|that|this)", "do it"],
            ["好啊", "好呀", "可以啊", "可以呀", "行啊", "要(?:的|啊|呀)?", "需要", "来吧", "当然"]),
    # thanks, and praise of the helper ("you're a lifesaver", "帮了大忙")
    "thanks": ([r"(?:thank you|thank u|thanks|thanx|thx|thnx|tnx|ty|tysm|tyvm|many thanks|cheers|much appreciated"
                r"|appreciated|(?:i )?(?:really |truly |so )?appreciate (?:it|this|that|you|the help|your help|"
                r"all (?:the|your) help))"
                rf"(?: (?:so much|very much|a lot|a ton|a bunch|a million|heaps|loads|again|(?:for|4) {_FOR}"
                rf"(?: {_FOR}){{0,6}}))*",
                r"you'?re (?:a |the )?(?:lifesaver|life saver|best|star|legend|genius|hero|awesome|amazing|great)",
                "you rock", r"you saved (?:me|my (?:day|life|bacon|skin))(?: again| today)?",
                r"(?:that|this|it) helped(?: (?:a lot|a ton|so much|massively))?",
                r"(?:that|this|it) (?:was|is|has been) (?:(?:super|very|really|so|extremely|incredibly) )*"
                r"(?:helpful|useful|a (?:big |huge |great )?help)",
                r"(?:big|huge|great) help", "lifesaver", "love (?:you|ya)"],
               [r"(?:太|非常|十分|万分|真的|真是|超级?|多多)?(?:谢谢|谢了|谢啦|谢咯|多谢|感谢|感恩|蟹蟹|3q|辛苦(?:了|啦|你了|您了)?"
                r"|麻烦(?:你|您)了)(?:你|您|你们|啦|了|哈|哦|呀|啊|咯|喽|嘞|大佬|老师|亲|呢)*"
                r"(?:的(?:耐心|热心|详细)?(?:帮助|帮忙|解答|建议|讲解|回答|分享)|的耐心)?",
                r"谢谢(?:你|您)?(?:帮我|为我|给我)(?:(?![再还也吗呢但])[\u4e00-\u9fff]){1,12}",
                r"帮(?:了)?(?:我)?(?:大忙|很大的忙|了很多)(?:了|啦)?", r"你(?:真|太|好|真的)?(?:棒|厉害|靠谱|贴心)(?:了|啊|呀)?",
                "学到了", "受教了", "涨知识了", "比心", "爱你", "感激不尽", "多亏(?:了)?你"]),
    # a verdict on the result; to an offer of more work it is a yes as well
    "verdict": ([rf"(?:(?:that'?s|this is|it'?s|that is|it is|this|that|it|looks|sounds|reads|seems|feels|"
                 rf"(?:that|this|it|all|everything) (?:looks|sounds|reads|seems|feels)) )?(?:{_SO} )*{_GOOD}"
                 r"(?: (?:now|enough|to me|indeed))*",
                 "lgtm", "love it", "loving it", r"i love (?:it|this|that|them)", r"love (?:this|that)",
                 r"(?:nice|great|good) (?:one|job|work|stuff)", "well done", "nailed it", "you nailed it",
                 r"(?:that|this|it) (?:works|will work|'ll work|should work|should do it|should do|will do|'ll do)"
                 r"(?: for me| perfectly| great| fine)?", "works for me", r"that'?ll do", "will do",
                 "sounds like a plan", "not bad", r"(?:that'?s )?fine by me", "10/10", r"chef'?s kiss"],
                [rf"{_ZH_ON}?(?:就|也)?{_ZH_DEG}*(?:完美|不错|棒|赞|漂亮|满意|到位|给力|靠谱|好用|实用|有用|合适|专业|厉害|牛"
                 rf"|优秀|通顺|自然|精彩|好看|好听|好吃|地道|合理|全面|简洁){_ZH_END}*",
                 # 好, 可以, 行, 对, 清楚 are a verdict with a degree or a subject ("很好", "写得清楚");
                 # alone they acknowledge ("好", "明白了", "清楚了" while learning)
                 rf"(?:{_ZH_ON}(?:就|也)?{_ZH_DEG}*|{_ZH_DEG}+)(?:好|可以|行|对|ok|清楚|清晰|喜欢){_ZH_END}*",
                 "可以的", "可以(?:可以)+", "没毛病", "不错(?:不错)+"]),
    # the result is just what was wanted
    "exact": ([r"(?:that'?s|this is|it'?s|that is) (?:(?:exactly|just|precisely) )?(?:what|the (?:thing|one)) i "
               r"(?:needed|wanted|was looking for|meant|had in mind|asked for|was after)",
               r"(?:exactly|just|precisely) (?:what|the (?:thing|one)) i (?:needed|wanted|was looking for|meant|"
               r"had in mind|asked for|was after)", "exactly right", r"(?:that'?s|this is|it'?s) the one"],
              [r"就是(?:这个|这样)(?:意思|感觉|效果)?(?:了|啊|吧)?", r"(?:这)?(?:正|就)是我(?:想要|要|需要|要找|想)的(?:效果|东西|感觉|答案)?",
               "跟我想的一样", "完全符合(?:要求|预期)?", "正合我意", "就要这个(?:效果)?"]),
    # it works now: a fix confirmed, which may follow a report of what the user did
    "works": ([r"(?:(?:and |but )?(?:now |finally |yep |yes |ok )?)"
               r"(?:it|that|this|everything|all|the [\w-]+(?: [\w-]+)?) "
               r"(?:works|worked|is working|'?s working|runs|ran|compiles|compiled|passes|passed|builds|loads|"
               r"is fixed|got fixed|is solved|is gone|went away|went through)"
               r"(?: (?:now|fine|perfectly|great|again|like a charm|beautifully|just fine))*",
               r"works (?:now|perfectly|great|like a charm)(?: now)?", "working now", r"(?:all )?fixed(?: it| now)?",
               r"solved(?: it)?", r"(?:that|this|it) (?:fixed|solved|did) (?:it|the (?:problem|issue|bug|trick|job))",
               "problem solved", r"(?:all )?(?:tests?|ci|build) (?:pass(?:es|ed|ing)?|green|works?)(?: now)?",
               "all green", r"no more errors?(?: now)?", r"(?:it'?s|everything'?s|it is) (?:back|fine|working) now"],
              [r"(?:终于|总算|果然|现在|已经|都|也|就|这下|居然)*(?:好了|可以了|行了|成功了|解决了|通了|跑通了|跑起来了|能用了"
               r"|能跑了|好使了|正常了|没问题了|没报错了|不报错了|生效了|修好了|弄好了|搞好了|装好了|管用(?:了)?|有用(?:了)?|奏效了)"
               r"(?:了|啦|耶|哈|哇)*",
               r"(?:现在|终于|这下)(?:对|准)了", r"(?:果然|原来|确实)是(?:这个|这样|它|这里|这儿)(?:的问题|的原因|问题|原因)?(?:了|啊|呀)?"]),
    # nothing more is wanted: "that's all", "就这样", "没别的了", a goodbye
    "final": ([r"that'?s (?:all i (?:need|needed|wanted|had)|all|it|everything|enough)"
               r"(?: (?:for (?:now|today|tonight|me|this|(?:the|this|my|our) [\w-]+(?: [\w-]+){0,2})"
               r"|then|thanks|really))*",
               r"(?:i'?m|we'?re|i am|we are) (?:all |pretty much |totally )?(?:all set|good to go|done|good|set|sorted|"
               r"finished|ready)(?: (?:here|now|then|for (?:now|today|the day|tonight)|"
               r"with (?:this|it|that|the [\w-]+(?: [\w-]+){0,2})))*",
               r"all (?:set|good|done|sorted|clear)", r"(?:it'?s|this is|that'?s) (?:all )?(?:done|settled|sorted|"
               r"a wrap|finished)", r"nothing (?:else|more)(?: (?:for now|needed|to add|then|thanks))*",
               r"no (?:more|further) (?:changes|edits|questions|tweaks)(?: needed)?",
               r"no (?:changes|edits|questions) needed", "no need", "good to go", "ready to go",
               r"let'?s (?:call it a day|wrap (?:it |this )?up|leave it (?:there|here|at that)|stop here)",
               "call it a day", r"(?:that'?s|let'?s call it) a wrap",
               r"done (?:for (?:today|now|the day|tonight)|here)",
               "case closed", "mission accomplished", r"bye(?: bye)?", "goodbye",
               r"see (?:you|ya)(?: later| soon| around)?", "ttyl", r"talk (?:to you )?(?:later|soon)",
               r"have a (?:good|nice|great|lovely) (?:one|day|night|evening|weekend)", r"good ?night",
               r"i'?ll (?:leave|stop) it (?:there|here)"],
              [r"(?:那)?就(?:这样子|这样|这么着|这么办|这么定了|这么定)(?:吧|了|啦|呗|哈)*", r"(?:那)?这么定了", r"定了(?:定了)?",
               r"(?:今天|暂时|目前)?(?:就)?先?(?:这样|到这里|到这儿|到这)(?:吧|了|啦)+", r"搞定(?:了|啦|咯)?", r"完成(?:了|啦)",
               r"完事(?:了|儿|啦)?", r"结束(?:了|啦)", "大功告成", r"收工(?:了|啦)?",
               r"没(?:有)?(?:别的|其他的?|其它的?|什么|啥)(?:事|问题|要问的|需要的|要改的)?(?:了|啦)", r"没(?:有)?了", "没事了",
               r"不用(?:再)?(?:修改|调整|改|调|弄|麻烦|动)?(?:了|啦)", r"不需要(?:了|啦)", "够了", r"(?:可以|行|好|成|妥|ok)了(?:啦)?",
               r"妥妥的?", "拜拜", "再见", "回见", "晚安", r"下次(?:再)?(?:聊|见)", r"回头(?:再)?聊",
               r"(?:这样|这个|这版|现在这样)(?:就|也)(?:行|可以|好|够|ok|成)(?:了|啦|的)*",
               r"(?:这样|这个|这版|现在这样|现在)(?:行|可以|好|够|ok|成)(?:了|啦)+"]),
    # a decision among what was offered: "I'll go with those", "那就它了", "就选第二个"
    "decide": ([r"(?:(?:i think |then |so )?"
                r"(?:i'?ll|i will|i'?m gonna|i'?m going to|we'?ll|we will|let'?s|i'?m|we'?re) )"
                r"(?:go(?:ing)? with|take|taking|pick|picking|choose|get|getting|buy|buying|order|book|"
                rf"stick(?:ing)? with|grab) (?:{_CHOICE}|{_IT})",
                rf"going with {_IT}", "sold", "deal", r"it'?s a deal", "settled", "that settles it", "decided",
                r"(?:that'?s|it'?s) a keeper", "ship it", r"(?:(?:i'?ll|let'?s|we'?ll) )?(?:keep|leave) it "
                r"(?:as is|like that|that way|as it is)", "final answer"],
               [rf"(?:那)?(?:我)?就(?:选|要|买|订|定|用|拿)?{_ZH_PICK}(?:了|吧|啦)*",
                rf"(?:那)?(?:我)?(?:选|要|买|订|定|用|拿){_ZH_PICK}(?:了|啦)+", r"用(?:这个|这版|它)吧"]),
    # the user takes the result to use it, or the rest of the work on themselves
    "use": ([rf"(?:(?:ok|so|then) )?{_I_WILL}(?: (?:now|just|go|go ahead and|definitely|probably|then|quickly|"
             rf"totally|right away|and))* {_USE_VERB}(?: (?:{_IT}|{_MADE}|out|away))?(?: {_TAIL}){{0,8}}",
             r"(?:sending|submitting|posting|printing|using|forwarding|sharing|presenting|deploying|merging|"
             rf"pushing|cooking|making|baking|booking|ordering|trying) (?:{_IT}|{_MADE})(?: {_TAIL}){{0,6}}",
             r"(?:i'?ll|i will|i can|i'?m gonna|i'?m going to|let me) (?:take it|handle it|handle the rest|"
             r"do the rest|manage|take over|figure out the rest|finish (?:it|the rest|up))"
             r"(?: (?:from here|myself|on my own|now))*", r"i(?:'?ve)? got it from here", r"i(?:'?ve)? got this",
             r"leave (?:it|the rest) (?:to|with) me"],
            # [那][我] adverb(s) verb [it] [particles]: "我这就发给老板", "那我就买这个了", "回头试试";
            # an adverb of time or intent is needed: "我试了" reports, "我拿去用了" decides
            [r"(?:那)?(?:我|我们)?(?:就|这就|马上|现在就|等会儿?|待会儿?|回头|先|一会儿?|明天|晚点|今晚|直接|打算|准备|去|拿去"
             r"|先拿去|把它|照着)+(?:用|发|交|提交|打印|试|下单|买|订|做|上传|部署|照做|收藏|保存|分享|转发|执行)"
             rf"{_ZH_OBJ}*", r"(?:那)?(?:我|我们)?试试(?:看)?(?:吧|了)?", r"(?:已|先)?(?:收藏|保存|存|码住|马住)(?:下来)?(?:了|啦)",
             r"(?:剩下的|后面的|接下来的|其他的|其余的)?(?:我|我们)自己(?:来|弄|搞|改|处理|搞定|调|写|想办法)"
             r"(?:吧|了|啦|就行|就好|就可以)*"]),
    # thumbs up, folded hands, a smile: a verdict without words
    "emoji": ([], [r"(?:[\U0001F44D\U0001F44C\U0001F64F\u2705\U0001F389\U0001F60A\U0001F642\U0001F604\U0001F601"
                   r"\U0001F600\U0001F603\u2764\u2665\U0001F4AF\U0001F64C\U0001F44F\U0001F973\U0001F91D\u2728"
                   r"\U0001F4AA\U0001F60D\U0001F970\U0001F618\U0001FAE1\u263A\U0001F60E\U0001F525\u2B50\U0001F31F"
                   r"\U0001F496\U0001F495\U0001F606\U0001F929][\U0001F3FB-\U0001F3FF\uFE0F\u200d]*)+",
                   r":-?\)", r":-?d(?![a-z])", r"\^_?\^", "<3", r"=\)"]),
}
_ACTS = [(name, re.compile(rf"(?:{alt})(?![a-z0-9'])" if english else alt))
         for name, (en, zh) in _GRAMMAR.items() for english, alts in ((True, en), (False, zh)) for alt in alts]
_CLOSING = {"thanks", "verdict", "exact", "works", "final", "decide", "use", "emoji"}
_WEAK = {"verdict", "emoji"}  # to an offer of more work, these say yes to it
_GAP = re.compile(r"[\s,.!;:~…、。()\[\]\"“”‘’'*/\\|_-]+")
# what a report before "…and now it works" must not hold: a doubt, a "still", a request, a question
_MORE = re.compile(r"\b(?:but|though|however|still|not|no|never|again|why|how|what|which|where|when|can|could|"
                   r"would|should|please|help|need|want|only|except)\b|n't|但|不过|可是|只是|还是|仍|依然|又|没|不|吗|呢"
                   r"|怎么|为什么|请|帮|再|还|要|想")
_STARTS = re.compile(r"(?<=[\s,.!;:~…、。()])\S|[\u4e00-\u9fff]")
# the assistant offers more of the work ("Want me to add a subject line?", "要不要我再加一段？"):
# a yes or a bare verdict to it takes the offer, thanks or "no need" decline it
_OFFER = re.compile(r"\b(?:want me to|would you like|shall i|should i|do you want|need me to|like me to|"
                    r"want (?:a|an|the|some|me)|i can also|how about (?:i|adding|making|we)|should we|shall we|"
                    r"do you need)\b|要不要|需(?:不需)?要我|要我|我(?:可以|还可以|也可以)|是否(?:需要|要)|用不用|想不想|要再", re.I)
_LAST_QUESTION = re.compile(r"[^.!。！\n?？]*[?？][^?？]*$")


def _acts(text: str) -> list[str] | None:
    """The acts `text` is made of, read left to right taking the longest act at each point, or
    None when some stretch of it is no act."""
    acts: list[str] = []
    pos = 0
    while pos < len(text):
        best, kind = pos, ""
        for name, pattern in _ACTS:
            m = pattern.match(text, pos)
            if m and m.end() > best:
                best, kind = m.end(), name
        if kind:
            acts.append(kind)
            pos = best
        elif gap := _GAP.match(text, pos):
            pos = gap.end()
        else:
            return None
    return acts


def offers_more(reply: str) -> bool:
    """Whether the assistant's turn ends by offering more of the work ("Want me to add…?")."""
    last = _LAST_QUESTION.search(reply)
    return last is not None and _OFFER.search(last.group()) is not None


def closes_task(text: str, offered: bool = False) -> bool:
    """Whether a user turn finishes the task (the grammar above): closing acts and nothing new,
    or a report of what the user did ending in word that it works ("我把依赖加上了，现在正常了").
    `offered`: the assistant's last turn offered more work, which a yes or a verdict accepts."""
    said = unicodedata.normalize("NFKC", text[:_CLOSING_CHARS]).lower().replace("’", "'").strip()
    if not said or len(text) > _CLOSING_CHARS or "?" in said:  # a question asks for more
        return False
    acts = _acts(said)
    if acts is None:  # a report, then "now it works": the report holds no doubt, request or question
        for start in (m.start() for m in _STARTS.finditer(said) if m.start() > 0):
            tail = _acts(said[start:])
            if tail is not None and "works" in tail and not _MORE.search(said[:start]):
                acts = tail
                break
        else:
            return False
    closing = _CLOSING.intersection(acts)
    if offered and ("yes" in acts or closing <= _WEAK):
        return False
    return bool(closing)


def topic_terms(text: str) -> set[str]:
    """The words a turn's topic is made of: keywords as the index stores them (Latin stems,
    CJK bigrams); single CJK characters (好, 吃) say too little about a topic to count."""
    terms = fts_terms(w for w in keywords(text[:_TOPIC_TEXT_CHARS]) if w not in _ASKING)
    return {t if CJK_RUN.fullmatch(t) else index_term(t) for t in terms if not CJK_RUN.fullmatch(t) or len(t) > 1}


def topic_move(text: str, terms: set[str], vocabulary: set[str], min_keywords: int, shift_below: float,
               answering: bool = False, offered: bool = False) -> Move:
    """What a user turn does to the current topic (the module docstring's rules); `answering`:
    the assistant's last turn asked something, and a turn that is no new request answers it;
    `offered`: what it asked was an offer of more work (`offers_more`)."""
    said = " ".join(text[:_TOPIC_TEXT_CHARS].split())
    if closes_task(said, offered=offered):
        return "done"
    if _NEW_THING.search(said):
        return "switch"
    if _CONTINUES.search(said):
        return "continue"
    if _SWITCH.search(said) or _NOW.search(said):
        return "switch"
    requested = _REQUEST.search(said) is not None
    if _ASIDE.search(said) and (requested or _QUESTION.search(said)):
        return "switch"
    if answering and not requested:
        return "continue"
    if len(terms) >= min_keywords and (not vocabulary or len(terms & vocabulary) / len(terms) < shift_below) \
            and (requested or (_QUESTION.search(said) and not _ABOUT_IT.search(said))):
        return "switch"
    return "continue"


def opens_topic(text: str, terms: set[str], min_keywords: int) -> bool:
    """With no current topic, whether a user turn starts one: a turn of a topic's size, or a
    request however short ("教我做红烧肉", "plan a trip")."""
    said = " ".join(text[:_TOPIC_TEXT_CHARS].split())
    return bool(terms) and (len(terms) >= min_keywords or _REQUEST.search(said) is not None)


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
    changes: list[tuple[Move, str]] = []
    asked = bool(recent) and recent[-1].role == "assistant" and _ASKS.search(recent[-1].content) is not None
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
                                  offered=offered)
                task = cut(" ".join(t.content.split()), cfg.focus_chars)
                # a closing turn ("thanks, I'll send it to my boss tomorrow") starts no task
                starts = not focus and move != "done" and opens_topic(t.content, terms, cfg.topic_min_keywords)
            else:
                move, task = verdict
                starts = not focus and bool(task) and move != "done"
            if move == "done" and focus:
                changes.append(("done", focus))
                focus, focus_terms, since = "", set(), t.seq + 1
                context.clear()
            elif (move == "switch" and task) or starts:
                focus = task
                changes.append(("switch", focus))
                focus_terms, since = terms | topic_terms(task), t.seq
                context.clear()
        if cfg.topic_context_turns:
            context.append(terms)
            recent = [*recent, t][-cfg.topic_context_turns:]
        asked = t.role == "assistant" and _ASKS.search(t.content) is not None
        offered = asked and offers_more(t.content)
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


class Judge:
    """Seed 002's compiler on the chat path: the LLM's verdict on a user turn, within
    `session.topic_llm_timeout_s` for the whole call (the last `topic_llm_max_turns` user turns
    are asked); None whenever the rules must decide instead. It never raises: the turns are
    stored already, and a dead, slow or confused LLM costs the scratchpad its names, not the chat."""

    def __init__(self, llm: LLM, seqs: Sequence[int], cfg: SessionConfig) -> None:
        self.llm, self.cfg = llm, cfg
        self.asked = set(seqs[-cfg.topic_llm_max_turns:])
        self.deadline = time.monotonic() + cfg.topic_llm_timeout_s

    @classmethod
    def of(cls, memory: Parts, seqs: Sequence[int]) -> Judge | None:
        cfg = memory.config.session
        return cls(memory.llm, seqs, cfg) if cfg.topic_llm and memory.llm is not None else None

    def verdict(self, focus: str, recent: Sequence[Turn], turn: Turn) -> tuple[Move, str] | None:
        left = self.deadline - time.monotonic()
        if turn.seq not in self.asked or left <= 0:
            return None
        prompt = topic_prompt(focus, _within(recent, self.cfg.topic_llm_context_tokens),
                              turn.content[:_TOPIC_TEXT_CHARS], language=language_of(turn.content),
                              task_chars=self.cfg.task_name_chars)
        try:
            answer = prompt.parse(complete_within(self.llm, prompt.messages, prompt.json_schema, left))
        except Exception as exc:  # any failure of a provider: the rules decide this turn (see above)
            log.warning("topic of turn %d: the LLM gave no verdict (%s: %s); the rules decide",
                        turn.seq, type(exc).__name__, exc)
            return None
        task = cut(answer.task, self.cfg.focus_chars) if answer.task else ""
        if answer.move == "continue" and focus:
            task = focus  # the task goes on under the name it has
        elif answer.move == "switch" and not task:  # a switch the LLM left unnamed: the turn names it
            task = cut(" ".join(turn.content.split()), self.cfg.focus_chars)
        return answer.move, task


def _within(turns: Sequence[Turn], tokens: int) -> list[Turn]:
    """The newest of `turns` that fit in `tokens` (estimated), the oldest of them cut to fit."""
    kept: list[Turn] = []
    for t in reversed(turns):
        if tokens <= 0:
            break
        text = " ".join(t.content.split())
        cost = estimate_tokens(text)
        if cost > tokens:
            text = text[: max(1, len(text) * tokens // cost)] + "…"
        kept.append(t if text == t.content else t.model_copy(update={"content": text}))
        tokens -= cost
    return kept[::-1]


# ids of LLMs whose last topic call outlived its wait and still runs: the next turns go by the
# rules until it ends, so a hung server holds one thread, not one per turn
_late: set[int] = set()
_late_lock = threading.Lock()


def complete_within(llm: LLM, messages: Sequence[ChatMessage], json_schema: dict[str, Any] | None,
                    seconds: float) -> str:
    """`llm.complete`, waited for at most `seconds` (in a thread of its own, left to finish on
    its own deadline); `BackendError` when it is late, or while an earlier late call still runs."""
    key = id(llm)
    with _late_lock:
        if key in _late:
            raise BackendError("an earlier topic call to this LLM is still running")
    box: dict[str, Any] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            box["text"] = llm.complete(messages, json_schema=json_schema)
        except BaseException as exc:  # carried to the caller's thread
            box["error"] = exc
        finally:
            with _late_lock:
                finished.set()
                _late.discard(key)

    threading.Thread(target=run, name="memlane-topic", daemon=True).start()
    if not finished.wait(seconds):
        with _late_lock:
            if not finished.is_set():
                _late.add(key)
                raise BackendError(f"no answer within session.topic_llm_timeout_s ({seconds:.1f} s left)")
    if "error" in box:
        raise box["error"]
    return str(box["text"])
