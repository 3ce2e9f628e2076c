"""Seed 002 §4: which user turns finish the task at hand ("好的谢谢", "that works, cheers",
"ok I'll send it now"), so that the scratchpad moves it to the finished ones (`memlane.topics`).

A turn finishes the task when it is made of closing acts and nothing new; see the grammar below.
"""

from __future__ import annotations

import re
import unicodedata

_CLOSING_CHARS = 300  # not from a seed: a turn that closes a task is short; a longer one brings more

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
# words that do no act of the user's: a wish, a request, a doubt, a question ("我想…", "我还要…")
_ZH_NOT = "想要需帮你吗呢不没别但还再么啥哪谁几多怎"
_ZH_DO = rf"(?:(?![{_ZH_NOT}])[\u4e00-\u9fff\w])"  # a character of what the user does next
_ZH_WHEN = r"[\u4e00-\u9fff]{0,3}?"  # "周末", "今晚", "待会": when the user does it
# a time the user names for the next step ("周末弄", "下周一开练")
_ZH_TIME = (r"(?:今天|今晚|今早|明天|明早|明晚|后天|周末|这周|本周|下周[一二三四五六日天]?|周[一二三四五六日天]|上午|下午|晚上"
            r"|中午|早上|回头|待会儿?|等会儿?|一会儿?|晚点|改天|过两天|月底|下班后?|到时候?|下次|下回)")
# a name the assistant offered ("肌不可失"), not one ending in a "not" ("字体不好看")
_ZH_NAME = rf"(?:(?![{_ZH_NOT.replace('不', '')}这那太])[\u4e00-\u9fff\w]){{2,8}}?(?<![不没])"
# no name of an option: "what it is", "not sure it is"
# nor a change asked for before "then" ("shorter then", "more colour then", "ok then")
_NOT_THEN = r"(?:ok|okay|and|so|more|less|much|[a-z]{1,30}er|i|i'll|we|we'll|let's|make|add|change|use|it)\b"
_NOT_NAME = r"(?:not|no|what|whatever|whoever|how|why|where|which|who|but|if|whether|sure|think|so|that|this)\b"
# "-ing" words that are no next step of the user's ("something", "morning"), or that ask for more
_NOT_ACT = (r"(?:(?:some|any|no|every)?thing|morning|evening|during|string|spring|ring|king|bring|adding|making|"
            r"changing|wondering|thinking|asking|hoping|looking for|needing|wanting|getting (?:an?|this|that) error|"
            r"going with)\b"
            r"|(?:need|want|ask|like|wonder|have to|be able)\b")
# "-ed" words of a state, not of a deed ("confused", "stuck"), and "need"
_NOT_DID = (r"(?:need|feed|seed|speed|indeed|confused|interested|worried|tired|bored|excited|scared|surprised|"
            r"stressed|annoyed|overwhelmed|concerned|red|bed|used to|supposed|tried)\b")
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
    "ack": (["right", "o+h+", "ah+", "aha", "wow", "whoa", "hmm+", "hm", "um+", "lol", "lmao", "ha(?:ha)+",
             "he(?:he)+", "heh", "ha", "huh", "eh", "ugh+", "meh", "welp", "well", "oh well", "man", "dude", "mate", "buddy", "bro",
             "dear", "hun", "hon", "sweetie", "no", "nope", "nah", "then",
             "so", "and", "again", "phew", "whew", "omg", "yay", "woo+", "ooh", "indeed",
             "exactly"],  # "exactly" confirms ("so you mean…?"); it judges nothing
            [r"嗯+(?:呢|好)?", "哦+", "噢", "喔", "哇塞?", "诶", "欸", "唔", "对(?:的|对)?", "是的", "哈+",
             "嘿嘿", "嘻嘻", "呵呵", "那", "不用", "不要", "没有", "不了", "亲", _ZH_END]),
    # the answer received, understood: after an answer (the assistant asked nothing) it closes the
    # exchange ("收到", "got it"); answering a question it is a reply ("ok" to "formal or not?")
    "got": ([r"ok(?:ay|ey|ie)?", "k+", "alright", "all right", "got it", "gotcha", "i see", "understood", "noted",
             r"(?:that |it |this )?makes (?:sense|total sense)", "fair enough", r"(?:that )?(?:clears|cleared) (?:it|that|things) up",
             r"(?:i )?(?:get|got) (?:it|the idea|the picture) now", r"(?:i )?(?:understand|see) now", "roger(?: that)?",
             "copy that", "good to know", "bet", "fair", r"(?:that |it )?(?:clicks|clicked)(?: now)?"],
            [r"好(?:的|滴|哒|嘞|吧|好)*", "收到(?:了|啦)?", "得嘞", "妥了", r"(?:我)?(?:明白|知道|懂|了解|清楚)(?:了|啦)?", "行吧?",
             "可以", "那好", "那行", "成", "ok", r"(?:我)?(?:心里)?有(?:个|点)?(?:数|谱|底)(?:了|啦)",
             "学会了", r"原来如此", r"原来是这样(?:啊|呀)?"]),
    # a yes: to an offer of more work ("Want me to add a subject line?") it takes the work on
    "yes": (["yes", "yeah", "yep", "yup", "ya", "yea", "sure", "of course", "absolutely", "definitely", "please do",
             "go ahead", "why not", r"let'?s do (?:it|that|this)", "do it"],
            ["好啊", "好呀", "可以啊", "可以呀", "行啊", "要(?:的|啊|呀)?", "需要", "来吧", "当然"]),
    # thanks, and praise of the helper ("you're a lifesaver", "帮了大忙")
    "thanks": ([r"(?:thank you|thank u|thanks|thanx|thx|thnx|tnx|ty|tysm|tyvm|many thanks|cheers|much appreciated"
                r"|appreciated|gracias|merci|danke|grazie|obrigad[oa]|arigato|(?:i )?(?:really |truly |so )?appreciate (?:it|this|that|you|the help|your help|"
                r"all (?:the|your) help))"
                rf"(?: (?:so much|very much|a lot|a ton|a bunch|a million|heaps|loads|again|(?:for|4) {_FOR}"
                rf"(?: {_FOR}){{0,6}}))*",
                r"you'?re (?:a |the )?(?:lifesaver|life saver|best|star|legend|genius|hero|awesome|amazing|great)",
                "you rock", r"you saved (?:me|my (?:day|life|bacon|skin))(?: again| today)?",
                r"(?:that|this|it) (?:helped|helps)(?: (?:a lot|a ton|so much|massively))?",
                r"(?:that|this|it) (?:was|is|has been) (?:(?:super|very|really|so|extremely|incredibly) )*"
                r"(?:helpful|useful|a (?:big |huge |great )?help)",
                r"(?:big|huge|great) help", "lifesaver", "love (?:you|ya)"],
               [r"(?:太|非常|十分|万分|真的|真是|超级?|多多)?(?:谢谢|谢了|谢啦|谢咯|多谢|感谢|感恩|蟹蟹|3q|辛苦(?:了|啦|你了|您了)?"
                r"|麻烦(?:你|您)了|谢)(?:你|您|你们|啦|了|哈|哦|呀|啊|咯|喽|嘞|大佬|老师|亲|呢)*"
                r"(?:的(?:耐心|热心|详细)?(?:帮助|帮忙|解答|建议|讲解|回答|分享)|的耐心)?",
                r"谢谢(?:你|您)?(?:帮我|为我|给我)(?:(?![再还也吗呢但])[\u4e00-\u9fff]){1,12}",
                r"帮(?:了)?(?:我)?(?:大忙|很大的忙|了很多)(?:了|啦)?", r"你(?:真|太|好|真的)?(?:棒|厉害|靠谱|贴心)(?:了|啊|呀)?",
                "学到了", "受教了", "涨知识了", "比心", "爱你", "感激不尽", "多亏(?:了)?你"]),
    # a verdict on the result; to an offer of more work it is a yes as well
    "verdict": ([rf"(?:(?:that'?s|this is|it'?s|that is|it is|this|that|it|looks|sounds|reads|seems|feels|"
                 rf"(?:that|this|it|all|everything) (?:looks|sounds|reads|seems|feels)) )?(?:{_SO} ){{0,4}}{_GOOD}"
                 r"(?: (?:now|enough|to me|indeed))*",
                 "lgtm", "love it", "loving it", r"i love (?:it|this|that|them)", r"love (?:this|that)",
                 r"(?:nice|great|good|neat|clever|cool) (?:one|job|work|stuff|trick|tip|idea|call)", "well done", "nailed it", "you nailed it",
                 r"(?:that|this|it) (?:works|will work|'ll work|should work|should do it|should do|will do|'ll do)"
                 r"(?: for me| perfectly| great| fine)?", "works for me", r"that'?ll do", "will do",
                 "sounds like a plan", "not bad", r"(?:that'?s )?fine by me", "10/10", r"chef'?s kiss"],
                [rf"{_ZH_ON}?(?:就|也)?{_ZH_DEG}*(?:完美|不错|棒|赞|漂亮|满意|到位|给力|靠谱|好用|好使|实用|有用|合适|专业|厉害|牛"
                 rf"|优秀|通顺|自然|精彩|好看|好听|好吃|地道|合理|全面|全|简洁){_ZH_END}*",
                 # 好, 可以, 行, 对, 清楚 are a verdict with a degree or a subject ("很好", "写得清楚");
                 # alone they acknowledge ("好", "明白了", "清楚了" while learning)
                 rf"(?:{_ZH_ON}(?:就|也)?{_ZH_DEG}*|{_ZH_DEG}+)(?:好|可以|行|对|ok|清楚|清晰|喜欢){_ZH_END}*",
                 "可以的", "可以(?:可以)+", "没毛病", "不错(?:不错)+", "绝了", "绝绝子", "yyds",
                 rf"{_ZH_NAME}{_ZH_DEG}*(?:不错|好听|好看|挺好|很好|很棒|完美|可以|合适|满意){_ZH_END}*"]),
    # the result is just what was wanted
    "exact": ([r"(?:that'?s|this is|it'?s|that is) (?:(?:exactly|just|precisely) )?(?:what|the (?:thing|one)) i "
               r"(?:needed|wanted|was looking for|meant|had in mind|asked for|was after)",
               r"(?:exactly|just|precisely) (?:what|the (?:thing|one)) i (?:needed|wanted|was looking for|meant|"
               r"had in mind|asked for|was after)", "exactly right", r"(?:that'?s|this is|it'?s) the one",
               r"(?:that'?s |this is |it'?s )?(?:exactly|just|precisely) it", "this is it"],
              [r"就是(?:这个|这样)(?:意思|感觉|效果)?(?:了|啊|吧)?", r"(?:这)?(?:正|就)是我(?:想要|要|需要|要找|想)的(?:效果|东西|感觉|答案)?",
               "跟我想的一样", "完全符合(?:要求|预期)?", "正合我意", "就要这个(?:效果)?"]),
    # it works now: a fix confirmed, which may follow a report of what the user did
    "works": ([r"(?:(?:and |but )?(?:now |finally |yep |yes |ok )?)"
               r"(?:it|that|this|everything|all|the [\w-]+(?: [\w-]+)?) "
               r"(?:works|worked|is working|'?s working|runs|ran|compiles|compiled|passes|passed|builds|loads|"
               r"is fixed|got fixed|is solved|is gone|went away|went through)"
               r"(?: (?:now|fine|perfectly|great|again|like a charm|beautifully|just fine))*",
               r"works(?: (?:now|perfectly|great|like a charm))*", "working now", r"(?:all )?fixed(?: it| now)?",
               r"solved(?: it)?", r"(?:that|this|it) (?:fixed|solved|did) (?:it|the (?:problem|issue|bug|trick|job))",
               "problem solved", r"(?:all )?(?:tests?|ci|build) (?:pass(?:es|ed|ing)?|green|works?)(?: now)?",
               r"(?:all |it'?s |tests? (?:are |is )?)?green(?: (?:now|again))?", r"no more [\w-]+(?: now)?",
               r"(?:(?:and |now |yep |ok )?)(?:these|those|they|both(?: of them)?|all of them) (?:work|worked|are working|fit|"
               r"run|ran|pass|passed)(?: (?:now|fine|perfectly|great|again))*", r"(?:it'?s|everything'?s|it is) (?:back|fine|working) now"],
              [r"(?:终于|总算|果然|现在|已经|都|也|就|这下|居然)*(?:好了|可以了|行了|成功了|解决了|通了|跑通了|跑起来了|能用了"
               r"|能跑了|好使了|正常了|没问题了|没报错了|不报错了|生效了|修好了|弄好了|搞好了|装好了|管用(?:了)?|有用(?:了)?|奏效了)"
               r"(?:了|啦|耶|哈|哇)*",
               r"(?:现在|终于|这下)(?:对|准)了", r"(?:他|她|孩子|他们|她们)(?:终于|总算|也|就)?(?:懂|会|明白|学会|听懂)了", r"(?:果然|原来|确实)是(?:这个|这样|它|这里|这儿)(?:的问题|的原因|问题|原因)?(?:了|啊|呀)?"]),
    # nothing more is wanted: "that's all", "就这样", "没别的了", a goodbye
    "final": ([r"that'?s (?:all i (?:need|needed|wanted|had)|all|it|everything|enough|plenty)"
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
               r"i'?ll (?:leave|stop) it (?:there|here)",
               r"that'?s (?:enough|plenty) to (?:get (?:me |us )?(?:started|going)|go on|start with|work with)",
               r"enough for (?:today|now|tonight)",
               # leaving: "gotta run", "gotta run to a meeting" (not "I need to go to Paris")
               r"(?:i )?(?:gotta|got to|have to|need to|must) (?:run|go|dash|head out|bounce|jet)(?: now)?"
               r"(?: to (?:an? |my |the )?(?:meeting|class|work|call|appointment|practice|pickup|school|lunch|dinner|bed))?"],
              [r"(?:那)?(?:就|先)(?:这样子|这样|这么着|这么办|这么定了|这么定)(?:吧|了|啦|呗|哈)*",
               # "就这么说", "就这么发": the user takes it as it stands
               r"(?:那)?(?:就|先)(?:这么|这样)(?:说|写|发|回|办|弄|来|用|交|做)(?:吧|了|啦)*", r"(?:那)?这么定了", r"定了(?:定了)?",
               r"(?:今天|暂时|目前)?(?:就)?先?(?:这样|到这里|到这儿|到这)(?:吧|了|啦)+", r"搞定(?:了|啦|咯)?", r"完成(?:了|啦)",
               r"完事(?:了|儿|啦)?", r"结束(?:了|啦)", "大功告成", r"收工(?:了|啦)?", r"(?:那)?算了(?:吧)?", r"再说(?:吧|啦)?",
               r"没(?:有)?(?:别的|其他的?|其它的?|什么|啥)(?:事|问题|要问的|需要的|要改的)?(?:了|啦)", r"没(?:有)?了", "没事了",
               r"不用(?:再)?(?:修改|调整|改|调|弄|麻烦|动)?(?:了|啦)", r"不需要(?:了|啦)", "够了", r"够用(?:了|啦)", r"(?:可以|行|好|成|妥|ok)了(?:啦)?",
               r"妥妥的?", "拜拜", "再见", "回见", "晚安", r"下次(?:再)?(?:聊|见)", r"回头(?:再)?聊",
               r"(?:这样|这个|这版|现在这样)(?:就|也)(?:行|可以|好|够|ok|成)(?:了|啦|的)*",
               r"(?:这样|这个|这版|现在这样|现在)(?:行|可以|好|够|ok|成)(?:了|啦)+"]),
    # a decision among what was offered: "I'll go with those", "那就它了", "就选第二个"
    "decide": ([r"(?:(?:i think |then |so )?"
                r"(?:i'?ll|i will|i'?m gonna|i'?m going to|we'?ll|we will|let'?s|i'?m|we'?re) )"
                r"(?:go(?:ing)? with|take|taking|pick|picking|choose|get|getting|buy|buying|order|book|"
                rf"stick(?:ing)? with|grab) (?:{_CHOICE}|{_IT})",
                # an option named: "we'll go with ticket to ride"
                rf"(?:(?:i'?ll|i will|we'?ll|we will|let'?s) )?go(?:ing)? with (?!{_NOT_NAME}|an?\b)[\w'&-]+(?: [\w'&-]+){{0,3}}",
                rf"going with {_IT}", "sold", "deal", r"it'?s a deal", "settled", "that settles it", "decided",
                r"(?:that'?s|it'?s) a keeper", "ship it", r"(?:(?:i'?ll|let'?s|we'?ll) )?(?:keep|leave) it "
                r"(?:as is|like that|that way|as it is)", "final answer",
                rf"(?:(?!{_NOT_NAME})[\w'&+-]{{1,30}} ){{1,6}}it is", "done deal",
                rf"(?!{_NOT_NAME}|{_NOT_THEN})[\w'&-]{{1,30}}(?: (?!{_IT}\b)[\w'&-]{{1,30}})? then"],
               [rf"(?:那)?(?:我)?就(?:选|要|买|订|定|用|拿)?{_ZH_PICK}(?:了|吧|啦)*",
                rf"(?:那)?{_ZH_PICK}(?:好|吧|不错|可以|行)(?:了|吧|啦)*",
                rf"(?:那)?(?:我)?(?:选|要|买|订|定|用|拿){_ZH_PICK}(?:了|啦)+", r"用(?:这个|这版|它)吧",
                # "那先买200G的吧", "那还是订周五的吧": a choice said with what is chosen
                r"那(?:我)?(?:就|先|还是)(?:买|选|要|订|定|拿|换|报|约)(?:(?![再还帮你我吗呢但])[\u4e00-\u9fff\w+.-]){1,10}?的?吧"]),
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
    # the user's own next step with the result, in any words: "ok calling the vet now", "gonna go
    # practice", "行 我周末就去买土", "我抄一下"; it closes only beside another closing act or an
    # acknowledgement (`closes_task`), alone it may report what the user is doing
    "act": ([rf"(?:{_I_WILL} )?(?:(?:now|just|go|go ahead and|definitely|probably|then|quickly|right away|and) )*"
             rf"(?!{_NOT_ACT})[a-z]{{1,30}}ing(?: {_TAIL}){{0,8}}",
             rf"{_I_WILL}(?: (?:now|just|go|go ahead and|definitely|probably|then|quickly|right away|and))* "
             rf"(?!{_NOT_ACT})[a-z]+(?: {_TAIL}){{0,8}}"],
            [rf"(?:那)?(?:我|我们)?{_ZH_WHEN}(?:就|这就|马上|现在就|先|去|回头|直接|赶紧|得)+"
             rf"(?![是有太挺很点]|这样|这么|那样|那么)"  # "就是有点长" says what is wrong, "就去买" what the user does
             rf"{_ZH_DO}{{1,8}}",
             rf"(?:那)?(?:我|我们)(?:先|就|去)?{_ZH_DO}{{1,2}}一下(?:吧|了|啦)?",
             # a time named instead of the adverb: "周末弄", "下周一开练", "那我上午出门", "这周抽空去银行打"
             rf"(?:那)?(?:我|我们)?{_ZH_TIME}(?:抽空|就|先|再|去|得)*(?![是有太挺很点]){_ZH_DO}{{1,8}}"]),
    # what the user did, said in a word: "sent!", "booked", "ordered it"
    "did": ([rf"(?:just |already |all )?(?:sent|done|bought|booked|ordered|paid|submitted|posted|printed|made|built|"
             rf"(?!{_NOT_DID})[a-z]{{2,24}}ed)(?: (?:it|them|that|this))?"],
            [r"(?:已经|刚)?(?:发|交|买|订|下单|提交|打印|抄|存|改|弄|装)(?:给(?:(?![再还帮你我吗呢但])[\u4e00-\u9fff]){1,4}|[他她]们?)?"
             r"(?:好|完)?了(?:啦)?"]),
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
_HEARD = {"ack", "got"}  # beside one of these (or a closing act) the user's next step closes
_WEAK = {"verdict", "emoji"}  # to an offer of more work, these say yes to it
_GAP = re.compile(r"[\s,.!;:~…、。()\[\]\"“”‘’'*/\\|_\U0001F300-\U0001FAFF\uFE0F\u200d-]+")  # other emoji: no act
# what a report before "…and now it works" must not hold: a doubt, a "still", a request, a question,
# a maybe or words reported ("they might say the band is fixed")
_MORE = re.compile(r"\b(?:but|though|however|still|not|no|never|again|why|how|what|which|where|when|can|could|"
                   r"would|should|please|help|need|want|only|except|if|might|may|maybe|perhaps|say|says)\b|n't|但|不过|可是|只是|还是|仍|依然|又|没|不|吗|呢"
                   r"|怎么|为什么|请|帮|再|还|要|想")
_STARTS = re.compile(r"(?<=[\s,.!;:~…、。()])\S|[\u4e00-\u9fff]")
# the assistant offers more of the work ("Want me to add a subject line?", "要不要我再加一段？"):
# a yes or a bare verdict to it takes the offer, thanks or "no need" decline it
_OFFER = re.compile(r"\b(?:want me to|would you like|shall i|should i|do you want|need me to|like me to|"
                    r"want (?:a|an|the|some|me)|i can also|how about (?:i|adding|making|we)|should we|shall we|"
                    r"do you need)\b|要不要|需(?:不需)?要我|要我|我(?:可以|还可以|也可以)|是否(?:需要|要)|用不用|想不想|要再", re.I)
_LAST_QUESTION = re.compile(r"(?:(?<![^.!。！\n?？])|(?![^.!。！\n?？]))[^.!。！\n?？]*[?？][^?？]*$")  # not from inside a run: linear


# a Chinese choice said with what is chosen: "那就千岛湖", "那还是换锂电", "我选B"
# (not 用: "那就用英文写吧" picks how the work is done, and the work goes on)
_ZH_CHOOSE = re.compile(r"(?:那|那么)?(?:我|我们)?(?:就|还是|就选|选|就定|定|约|就约)(?:选|要|买|订|定|拿|换|去|报|约)?")
_OPTION_RUN = re.compile(r"[\u4e00-\u9fff\w]+")
_OPTION_CHARS = (2, 12)  # what an option's name spans, in characters
_PARTICLES = "吧了啦呗呀啊哦好的"
_NOT_OPTION = re.compile(r"[吗呢么]")  # a question, not a name
_ZH_PRONOUNS = "我你您他她它这那"  # "我们", "这个" begin no name


def _option(text: str, pos: int, offered: str) -> tuple[int, str]:
    """Where an option the assistant's last turn named ends when `text` names one at `pos`, and
    the act it is: "decide" after a word of choosing ("那就千岛湖", "那还是换锂电吧"), else "named",
    which closes nothing alone ("长生不记 好 定了": the verdict closes); (pos, "") when none. The
    name is the whole run of words there, particles after it aside, so "那就是有点长" names nothing."""
    frame = _ZH_CHOOSE.match(text, pos)
    at = frame.end() if frame and frame.end() > pos else pos
    run = _OPTION_RUN.match(text, at)
    if run is None:
        return pos, ""
    end = run.end()
    while end > at and text[end - 1] in _PARTICLES:
        end -= 1
    name = text[at:end]
    low, high = _OPTION_CHARS
    if not low <= len(name) <= high or _NOT_OPTION.search(name):
        return pos, ""
    if name.isascii():  # a word of its own in the reply ("we" is not in "weeks"), and no short word
        if (at == pos and len(name) < 4) or not re.search(rf"(?<![a-z0-9']){re.escape(name)}(?![a-z0-9'])", offered):
            return pos, ""
    elif name not in offered or (at == pos and name[0] in _ZH_PRONOUNS):
        return pos, ""
    return run.end(), "decide" if at > pos else "named"


def _acts(text: str, start: int = 0, offered: str = "") -> tuple[list[str], int]:
    """The acts `text` is made of from `start`, read left to right taking the longest act at each
    point, and where that reading stopped: `len(text)` when all of it is acts. `offered`: the
    assistant's last turn, NFKC-folded and lowercased, whose options the user may name."""
    acts: list[str] = []
    pos = start
    while pos < len(text):
        best, kind = _option(text, pos, offered) if offered else (pos, "")
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
            break
    return acts, pos


def _all_acts(text: str, start: int = 0, offered: str = "") -> list[str] | None:
    """The acts all of `text` from `start` is made of, or None when some stretch is no act."""
    acts, stop = _acts(text, start, offered)
    return acts if stop == len(text) else None


def offers_more(reply: str) -> bool:
    """Whether the assistant's turn ends by offering more of the work ("Want me to add…?")."""
    last = _LAST_QUESTION.search(reply)
    return last is not None and _OFFER.search(last.group()) is not None


def closes_task(text: str, offered: bool = False, asked: bool = False, reply: str = "") -> bool:
    """Whether a user turn finishes the task (the grammar above): closing acts and nothing new,
    or a report of what the user did beside word that it works ("我把依赖加上了，现在正常了",
    "fixed, the float was set too high 🙌"). `asked`: the assistant's last turn asked something,
    which a bare "ok" / "收到" answers rather than closes; `offered`: what it asked was an offer of
    more work, which a yes or a verdict accepts; `reply`: that turn, whose options the user may
    take by name. A word of what the user did ("sent", "booked") closes after an answer."""
    said = unicodedata.normalize("NFKC", text[:_CLOSING_CHARS]).lower().replace("’", "'").strip()
    if not said or len(text) > _CLOSING_CHARS or "?" in said or _BACK_SOON.search(said):  # a question asks for more
        return False
    options = unicodedata.normalize("NFKC", reply).lower().replace("’", "'")
    acts = _all_acts(said, 0, options)
    if acts is None:  # a report beside "it works": the report holds no doubt, request or question
        head, stop = _acts(said, 0, options)
        for start in (m.start() for m in _STARTS.finditer(said) if m.start() > stop):
            tail = _all_acts(said, start, options)
            if tail is not None and "works" in head + tail and not _MORE.search(said[stop:start]):
                acts = head + tail
                break
        else:
            return False
    closing = _CLOSING.intersection(acts)
    if "act" in acts and (closing or _HEARD.intersection(acts)):
        closing.add("use")  # "ok calling the vet now": the user goes off to use the result
    if "got" in acts and not asked:
        closing.add("got")  # "收到" after an answer: nothing more is asked for
    if "did" in acts and not asked:
        closing.add("did")  # "sent" after a draft: the result is used
    if offered and ("yes" in acts or closing <= _WEAK):
        return False
    return bool(closing)


# acts that judge or take the result: a statement after them may close the task (`verdict_lead`)
_JUDGES = {"got", "verdict", "works", "thanks", "final", "decide", "exact"}


def verdict_lead(text: str) -> int:
    """Where a turn that opens by judging or taking the result ("这版可以", "perfect,", "ok",
    "弄好了") stops doing so: the end of its leading acts when one of them judges; 0 otherwise.
    What follows it is for `memlane.topics` to read (a statement closes, a request goes on)."""
    said = unicodedata.normalize("NFKC", text[:_CLOSING_CHARS]).lower().replace("’", "'")
    acts, stop = _acts(said)
    return stop if _JUDGES.intersection(acts) and 0 < stop < len(said) else 0


def closing_lead(text: str, name_chars: int) -> int:
    """Where a turn that opens by closing the task ("简历先这样，帮我写封辞职信", "thanks, that's
    all for the slides. Can you…") stops closing: the end of its leading closing acts, which may
    follow a name of what they close of at most `name_chars` ("简历", "the email"); 0 when it
    opens otherwise."""
    said = unicodedata.normalize("NFKC", text[:_CLOSING_CHARS]).lower().replace("’", "'")
    for skip in range(0, min(len(said), name_chars) + 1):
        if skip and not _STARTS.match(said, skip):
            continue  # a name ends at a word's end
        if _MORE.search(said[:skip]):
            break
        acts, stop = _acts(said, skip)
        if _CLOSING.intersection(acts) and stop > skip:
            return stop
    return 0


# "brb", "be right back": the user steps away and comes back to the task
_BACK_SOON = re.compile(r"\bbrb\b|\bbe right back\b|\bback in (?:a (?:sec|min|minute|bit)|\d+)")
# acts that close the task at a turn's end whatever was said before them: "那就云杉坪+蓝月谷 定了",
# "新手上路越催越慢 就这个 哈哈", "他自己算出来了 太感谢了😄"
_TAIL_CLOSING = {"thanks", "decide", "final", "exact"}


def closing_tail(text: str, answering: bool = False) -> int:
    """Where a turn that ends by closing the task ("…定了", "…就这个 哈哈", "…太感谢了😄") starts
    doing so: the start of its last closing acts when they thank, decide, say it is final or
    exactly what was wanted; 0 otherwise. `answering`: the assistant asked something, and an
    answer ending in thanks ("I only have 5mm, thanks") thanks for the help to come. What comes
    before is for `memlane.topics` to read."""
    said = unicodedata.normalize("NFKC", text[:_CLOSING_CHARS]).lower().replace("’", "'").strip()
    wanted = _TAIL_CLOSING - {"thanks"} if answering else _TAIL_CLOSING
    for m in _STARTS.finditer(said):
        acts = _all_acts(said, m.start()) if m.start() else None
        if acts and wanted.intersection(acts):
            return m.start()
    return 0
