"""Topic switches (issue 30, seed 002 §4): does the scratchpad's current task stay current on a
follow-up and move to the finished tasks on a change of subject?

`bench/data/topics.json`: 24 hand-written sessions (12 Chinese, 12 English; writing, coding,
planning, learning, shopping, cooking), each user turn labelled start / continue / switch /
done. Each session runs turn by turn through a `Memory` of the progressive profile (its own
user); after each user turn the scratchpad says what memlane made of it: a new focus (switch),
no focus left (done), or the same (continue). Reported: switch precision and recall, done
recall, continue accuracy, per language.

Offline (default) the rules of `memlane.topics` decide. `--llm` lets the LLM judge each user
turn and name the task, as seed 002's compiler does (`session.topic_llm`, on in the progressive
profile), through the engine's own HTTP client on the server MEMLANE_LLM_BASE_URL names
(MEMLANE_LLM_MODEL, MEMLANE_LLM_API_KEY); a turn the LLM fails on is decided by the rules.
The in-session extraction is off in both runs: only the scratchpad is measured.

    python bench/topics.py --show 30
    python bench/topics.py --data bench/data/topics_holdout.json
    python bench/topics.py --data bench/data/topics_holdout2.json
    python bench/topics.py --data bench/data/topics_holdout3.json
    python bench/topics.py --data bench/data/topics_holdout4.json --similarity
    python bench/topics.py --data bench/data/topics_holdout5.json
    python bench/topics.py --data bench/data/topics_holdout9.json
    python bench/topics.py --data bench/data/topics_holdout10.json
    python bench/topics.py --data bench/data/topics_holdout11.json
    MEMLANE_LLM_BASE_URL=http://127.0.0.1:8080/v1 python bench/topics.py --llm

`--data bench/data/topics_holdout.json`: a holdout of 24 more sessions (12 Chinese, 12 English;
177 user turns, labelled the same way) in other domains and wordings: follow-ups in new words
that are neither answers nor edits, new tasks in the same domain, switches with and without a
marker, "done" said many ways. It was written apart, without reading the topic detector's code;
its first run (0.74 / 0.65 / 0.36 / 0.94 below) was the unseen figure. It has since been read
and tuned on (issue 30, row 5): it is a seen set now, like topics.json.

`--data bench/data/topics_holdout2.json`: 24 sessions (201 user turns) written apart while the
rules were tuned on the two sets above and run once, unseen, after that tuning (0.95 / 0.63 /
0.65 / 0.99 below). It has since been read and tuned on (issue 30 row 5, round 5): a seen set now.

Offline, switch precision / switch recall / done recall / follow-ups kept:

    set                         round 3 (top3)              round 4 (top4)              round 5 (top5)
    topics.json (seen)          0.94 / 0.97 / 1.00 / 0.98   1.00 / 0.94 / 1.00 / 1.00   1.00 / 1.00 / 1.00 / 1.00
    topics_holdout.json (seen)  0.74 / 0.65 / 0.36 / 0.94   0.96 / 0.85 / 1.00 / 0.99   0.96 / 0.85 / 1.00 / 0.99
    topics_holdout2.json (seen) -                           0.95 / 0.63 / 0.65 / 0.99   1.00 / 0.97 / 0.96 / 1.00
                                                            (unseen when run)

`--data bench/data/topics_holdout2.json`: a second holdout of 24 sessions (12 Chinese, 12
English; 201 user turns: 24 start, 101 continue, 30 switch, 46 done) in yet other domains
(spreadsheets, a leaking ceiling, a baby's sleep, a lease clause, SQL, a dog that ate a grape,
knitting, home wifi…): one-word follow-ups ("嗯 继续", "shorter?"), new tasks of the same kind,
switches mid-task with and without a marker and back again, "done" said many ways ("收到",
"行吧就这样", "corolla it is then", "ok that settles it, adding the indexes now") and turns that
look like done but go on ("好 那第二步呢", "ok and what about hills?"). It too was written
apart, without reading the topic detector's code or the other sets beyond the first two
sessions of `topics.json`; it was not read until round 5.

Round 5 kept what helped the three seen sets together (`memlane.topics.names_new_matter`): a
wh-question in new words switches when it names something and does not point back. Each part,
dropped alone (topics / holdout / holdout2, switch P and follow-ups kept): without the pointing
back ("它", "每块", "the") 0.97, 0.99 / 0.96, 0.99 / 1.00, 1.00; without the size-or-time
exception 1.00, 1.00 / 0.82, 0.95 / 1.00, 1.00; without the circumstance ("怎么办") 0.97, 0.99 /
0.96, 0.99 / 1.00, 1.00; without the left-out subject of a Chinese clause 1.00, 1.00 / 0.92, 0.98
/ 0.97, 0.99; without the English "a"/"tonight" condition 1.00, 1.00 / 0.92, 0.98 / 1.00, 1.00.
The rule with no exception at all (any such wh-question switches): 0.92, 0.97 / 0.68, 0.89 /
0.94, 0.98. Character n-gram overlap with the whole session so far was measured and dropped: on
these sets the assistant's turns are short, and the follow-ups in new words share no more
characters with the session than the new questions do (of the 70 turns in new words reaching that
rule, 4 share a CJK bigram with the session so far: follow-ups, switches and closings alike). The
any-wh-question rule was measured before the closing additions. Also in round 5, each for holdout2's
misses and changing nothing on the other two sets: new cues ("还有个事",
"while I'm at it", "also…" before a question), one more of the task's kind ("再来一道…", "now one
for the croissants", "…那段也帮我写个"), a short question starting a task when none is current,
and closings in new words ("这个好使", "好 周末弄", "行吧就这样", "works. thanks a ton", "this
helps a lot", "we'll go with ticket to ride").

`--data bench/data/topics_holdout3.json` (from wt-h5 34e295a): a third holdout of 24 sessions (12
Chinese, 12 English; 192 user turns: 24 start, 94 continue, 30 switch, 44 done) in other domains
again (braised fish, a visa, pandas, a mystery opening, a knee, tiles, a child's homework, a
shop's post, index funds, guitar chords, a father in hospital, an exam essay, a resume, cron,
house plants, sourdough, brakes, a best man's toast, Spanish words, fantasy football, git, a
science fair, running shoes, chess). Switches come bare, as a statement of a new matter, as a
yes/no question, as a new task of the same kind and as a return to an earlier task; "done" comes
as an acknowledgement, a verdict, thanks in passing or the user saying what they will do now,
and beside it are turns that only look done. It was written apart, without reading the topic
detector's code or the other sets beyond the first two sessions of `topics.json` and
`topics_holdout2.json`, and committed before the bench first ran on it. Run once after round 5's
tuning and not tuned on (switch P / R / done R / kept): round 5 0.92 / 0.77 / 0.73 / 0.98; the
code before round 5 (main at 5097d6d) 0.95 / 0.60 / 0.61 / 0.99. Round 5's one new false switch
there: "加几个话题标签" ("几个" is "a few", not a question).
It has since been read and tuned on (issue 30 row 5, round 6): a seen set now.

Round 6 (holdout3 read) kept, each measured on the four seen sets together (switch P / R / done
R / kept, before → after): topics.json 1.00 / 1.00 / 1.00 / 1.00 → unchanged; holdout 0.96 /
0.85 / 1.00 / 0.99 → 0.96 / 0.92 / 1.00 / 0.99; holdout2 1.00 / 0.97 / 0.96 / 1.00 → 1.00 / 0.97 /
0.98 / 1.00; holdout3 0.92 / 0.77 / 0.73 / 0.98 → 0.96 / 0.90 / 0.98 / 0.99.
- A judgement of the result followed by a statement closes the task (`memlane.topics.settles`:
  "这版可以 不改了", "perfect, that's final", "ok I'm fried, enough for today"), after an answer,
  when the statement asks nothing, orders nothing, finds no fault and brings nothing more. It
  gave holdout3's done recall 0.73 → 0.98 and holdout2's 0.96 → 0.98. Without the English
  condition (a subject, "not" or "-ing" first, not a bare verb) topics.json keeps 0.98 of its
  follow-ups; a Chinese condition of the same kind (a subject, a result or a 了 at the end) was
  measured, changed nothing, and was dropped.
- A statement or a yes/no question telling a new matter of the user's own switches
  (`reports_new_matter`): "my X" as its subject, an event of late ("最近…"), or "got a…" with the
  subject left out, pointing back to nothing and in words new to the task. With any "I"/"我"/"we"
  as well, follow-ups kept fell to 0.96 / 0.95 / 0.98 / 0.95 (14 follow-ups giving the task's
  circumstances: "I'm on an M2 mac", "我家只有不粘锅") and no switch was gained; with no marker at
  all, 0.87 / 0.76 / 0.91 / 0.79. Without the rule holdout's recall is 0.88, holdout3's 0.83.
- A request without a verb of asking: the subject left out ("also need a birthday invite text…")
  and a thing named by what it is to do ("regex to match a US phone number…"): holdout's recall
  0.88 → 0.92; the first changes no figure (holdout3's one such turn came after a close the old
  rules missed) and is kept for the turn mid-task (tests/test_topics_forms.py).
- "几" after a verb opening its clause is "a few" ("加几个话题标签"): holdout3's precision 0.93 →
  0.96, follow-ups 0.98 → 0.99.
Not reached: yes/no questions sharing the task's words ("异地医保住院能直接报吗" at a hospital
stay, "小红书发价格会被限流吗" while writing the post), a return named by "刚才那条文案" with the
current task's words, "那帮我改这句：<new English sentence>" (a false switch), "那就不买了 单买".

`--data bench/data/topics_holdout4.json` (from wt-h6 795e022): a fourth holdout of 24 sessions
(12 Chinese, 12 English; 214 user turns: 24 start, 107 continue, 36 switch, 47 done) in other
domains again (pour-over coffee, a mouldy washing machine, an income-tax return, a gas water
heater, phones for parents, a child's fever, moving house, a driving test, a fish tank, IELTS
writing, docker, a Utah road trip, skateboarding, a salary offer, pytest, drywall, night-sky
photos…), written apart, without reading the topic detector's code or the other sets beyond the
first two sessions of `topics.json` and `topics_holdout3.json`, and committed before the bench
first ran on it. Run once after round 6's tuning, not tuned on (switch P / R / done R / kept):
round 6 0.92 / 0.64 / 0.62 / 0.96; the code before round 6 (main at dd0ccc1) 0.95 / 0.56 / 0.55 /
0.97. Round 6's one new false switch there is a statement of the new kind ("my ankles feel
wobbly"), and follow-ups kept (0.96) is below the 0.97 held on the seen sets; switch and done
recall stay far below seed 002's bar.

`--data bench/data/topics_holdout4.json`: a fourth holdout of 24 sessions (12 Chinese, 12
English; 214 user turns: 24 start, 107 continue, 36 switch, 47 done) in other domains again
(pour-over coffee, a mouldy washing machine, an income-tax return, swimming breaths, a gas water
heater, phones for parents, a year-end review, a child's fever, regexes, moving house, a driving
test, a new fish tank, a father's sixtieth, IELTS writing, tomato blight, bash and docker, a credit
card, an anniversary card, a Utah road trip, skateboarding, a cat's litter box, a salary offer,
pytest, a murder-mystery party, drywall, night-sky photos). Switches come bare, as a statement of
a new matter ("我家燃气热水器老是打不着火", "docker keeps eating my disk space"), as a yes/no
question ("她那张移动卡能换成老人套餐吗"), as a new task of the same kind ("顺手也给我妈写一条")
and as a return to an earlier task, mid-task and after a close; "done" comes as an
acknowledgement, a verdict ("chef's kiss"), thanks in passing, a decision or the user's next step,
beside look-alikes that go on ("好 那赡养老人那块呢", "ok and what about feeding, separate rooms?",
"可以 再加个emoji") and one-word follow-ups ("嗯", "要", "k", "shorter?"). It was written apart,
without reading the topic detector's code or the other sets beyond the first two sessions of
`topics.json` and `topics_holdout3.json`, committed before the bench first ran on it. It was not
read until round 7 (issue 30 row 5, holdout4 read and tuned on): a seen set now.

Round 7 tried a semantic signal and dropped it. `--similarity` measures it: the default embedder
(multilingual-e5-small-q4) gives each user turn a cosine to the task at hand (the turns since the
focus was set, as the rules ran), as a passage or with the "query: " prefix, by the max, the mean
or the centroid over the task's turns. The AUC (the chance that a switch is less similar to its
task than a follow-up; 0.5 is no signal) over the five sets is 0.31-0.62, and below 0.5 as often
as above: e5 puts short follow-ups ("用蓝色调", "svg better?", "she hates cheesy stuff") far from
everything and a new matter told in full, or a new thing of the task's kind, near the task. Over
the turns the rules keep, the cut that turns the first missed switch into a switch also switches
7-57 follow-ups (holdout4 7-25, holdout 34-56, holdout2 44-62, holdout3 51-70); over the turns
the rules switch, the cut keeping the most similar false switch going also keeps 0-10 true
switches (holdout 8-10, holdout3 4-5, holdout4 0-4). No threshold keeps follow-ups at 0.97 on
all five sets while gaining a switch, so none is kept, and no tunable was added. A one-off script
measured two more forms and found no more: the lift over the turn's similarity to
`NULL_TEXTS` (AUC 0.34-0.50) and the drift of the task's own vector when the turn is appended to
its text (one embedding a turn; AUC 0.45-0.63).

Round 7 kept instead, for holdout4's misses (switch P / R / done R / kept, before → after):
topics.json, holdout, holdout2 and holdout3 unchanged (1.00 / 1.00 / 1.00 / 1.00, 0.96 / 0.92 /
1.00 / 0.99, 1.00 / 0.97 / 0.98 / 1.00, 0.96 / 0.90 / 0.98 / 0.99); holdout4 0.92 / 0.64 / 0.62 /
0.96 → 0.94 / 0.83 / 0.91 / 0.97.
- Closings in new words (`memlane.closing`): interjections ("ha", "huh", "eh", "ugh"), "good to
  know", "成", "很全了", "this is it", "green now", "done deal", an option named before "then"
  ("longboard then", not "shorter then" or "cut it then"), "发给老师了", "那算了", "…再说".
- A report before "it works" holds no maybe or words reported ("they might say the band is
  fixed" goes on; it had closed the task).
- One more of the kind: "再帮我挑个…", "也给我妈写一条".
- Another question announced ("再问下 邮箱的正则呢") switches, or starts a task when none is
  current, whatever its form, unless it points back into the task.
Not reached on holdout4: statements and yes/no questions of a new matter with no marker ("docker
keeps eating my disk space", "is a longboard easier for a beginner…?", "我家燃气热水器老是打不着
火"), a decision then a new question ("手机还是定红米吧 哪家店送壳"), "补缴怎么弄" (a follow-up
read as a new matter) and "my ankles feel wobbly" (a false switch).

`--data bench/data/topics_holdout5.json` (from wt-tw5 0861950): a fifth holdout of 24 sessions
(274 user turns), written apart from the topic detector's code and not opened while round 7 was
tuned; run once after it, not tuned on (switch P / R / done R / kept): round 7 0.93 / 0.77 / 0.70
/ 0.97 (zh 0.89 / 0.67 / 0.74 / 0.97, en 0.95 / 0.88 / 0.67 / 0.97); main's code (dc40522) 0.92 /
0.75 / 0.70 / 0.98. Round 7's one new mistake there is a false close ("so monday then", read as an
option named before "then"); switch and done recall on unseen sessions stay below seed 002's bar.

`--data bench/data/topics_holdout6.json`: a sixth holdout of 24 sessions (12 Chinese, 12 English;
251 user turns, labelled the same way) in other domains again (考研, a cat after spaying, 公积金,
wedding seating, a withheld deposit, a child's teeth, unused leave, quarterly tax, a check-engine
light, a puppy's crate, brisket, solar quotes, 3D printing…), with switches mid-task and after a
close, with and without a marker, and returns to earlier tasks. It was written apart, without
reading the topic detector's code or the other sets beyond the first two sessions of
`topics_holdout5.json`, was not read while tuning, and was committed before the detector was
first run on it.

Round 8 (2026-11-29) read `topics_holdout5.json`'s mistakes: an option the assistant named in its
last turns, taken by name after a word of choosing ("那就千岛湖", "那还是换锂电", "那就958吧") or
beside another closing act ("长生不记 好 定了"), closes the task, but not a way of doing the work
("那就用英文写吧"); slang and plural closings ("bet", "fair", "that clicks", "these work", "thank
you dear", "得嘞", "绝了"); a word of what was done ("sent") after an answer. holdout5 (now read)
0.93 / 0.77 / 0.70 / 0.97 → 0.94 / 0.90 / 0.91 / 0.97; no other seen set lost a turn. holdout6, run once
before the round and once after it, unseen: 0.84 / 0.68 / 0.62 / 0.96 → 0.84 / 0.68 / 0.64 / 0.96
(zh done recall 0.71 → 0.75): the round carries little, as rounds before it did.

`--data bench/data/topics_holdout7.json`: a seventh holdout of 24 sessions (12 Chinese, 12 English;
253 user turns) in other domains again (renting, broadband, a toddler's fever, 异地医保, pandas and
docker, CET-4, a leaving certificate, sourdough, calculus, guitar, dog training…), with switches
marked and unmarked, returns to finished tasks, closes and requests in one turn, options taken by
name. Written apart in the same way (the first two sessions of `topics_holdout6.json` read for the
format), committed before the detector was first run on it, and not read while tuning.

Round 9 (2026-11-29) read `topics_holdout6.json`'s mistakes: a turn that only says what the user
did or will now do with the result, asking nothing ("fp-10 + an x stand, ordered", "alright,
trap's set", "ok fine, backyard only till then", "那我问问别家再说", "打了格力售后 明天上门"), closes the
task (`memlane.topics.steps_off`); a bare report of what was done ("我打了疫苗") or an order ("cut it
then") does not. The options a closing turn may take by name are now those of the task at hand
only (the assistant's turns before a switch or a close no longer count). holdout6 (now read) 0.84 /
0.68 / 0.64 / 0.96 → 0.86 / 0.78 / 0.77 / 0.96; holdout3's done recall 0.98 → 1.00; no other seen set
lost a turn. holdout7, unseen, run once before the round and once after it: 0.84 / 0.76 / 0.65 / 0.94
→ 0.84 / 0.76 / 0.67 / 0.94.

`--data bench/data/topics_holdout8.json`: an eighth holdout of 24 sessions (12 Chinese, 12 English;
253 user turns: 个税汇算, 公积金, 科目二, 幽门螺杆菌, a eulogy, a JR Pass, FastAPI, a bike chain,
salary talks, D&D, migraines…), written apart in the same way (the first two sessions of
`topics_holdout7.json` read for the format) and not read while tuning.

Round 10 (2026-11-29) read `topics_holdout7.json`'s mistakes: a turn that says anything of the
result and ends by thanking closes the task ("she loves it thx!!", "提交了 说三个工作日审核 谢了"; in
the seven labelled sets then, every user turn ending in thanks closed one); a cue of a new subject
after a sentence that closes ("ok going w the fescue, thanks man. unrelated but my kid's bike chain
keeps falling off") switches; "ohhh" is an interjection. holdout7 (now read) 0.84 / 0.76 / 0.67 /
0.94 → 0.86 / 0.86 / 0.81 / 0.94, holdout6 done recall 0.77 → 0.79, no other seen set lost a turn.
holdout8, unseen: main before rounds 9 and 10 0.97 / 0.69 / 0.57 / 0.99, after round 9 0.97 / 0.71 /
0.59 / 0.99, after round 10 0.97 / 0.76 / 0.65 / 0.99.

`--data bench/data/topics_holdout9.json`: a ninth holdout of 24 sessions (12 Chinese, 12 English;
266 user turns: 申论, blood pressure, returns, pivot tables, 鸡兔同笼, a hamster, a used car, a raised
bed, a Rust borrow error, cron, an ICU interview, Iceland, Medicare, moving to Montreal, knitting,
astrophotography, p-values, Anki…), written apart in the same way and not read while tuning. Run
first after round 10: 0.95 / 0.81 / 0.64 / 0.98 (main before rounds 9 and 10: 0.95 / 0.73 / 0.53 /
0.98).

Round 11 (2026-11-29) read `topics_holdout8.json`'s mistakes: a turn ending with a cheer closes the
task ("找到了 👌", "down from 2.1s to 800ms 🎉"; in the eight labelled sets then, 30 of the 30 user
turns ending so closed one), as does one ending in thanks and a word more ("thank you, really");
"X it is" names up to six words, "+" among them ("karaoke room + potluck at mine it is"), and an
emoji that is no closing act is a gap between acts ("watermelon it is 🍉"); "thats", "im", "ive"
open a statement as "that's", "I'm", "I've" do. A report that asks the assistant for more or tells
of a snag ("好 我改了一下 你再看看", "嗯 我跟他说了 他不同意") and a negated one ("I'm not done") no
longer close. holdout8 (now read) 0.97 / 0.76 / 0.65 / 0.99 → 0.97 / 0.90 / 0.84 / 0.99; holdout6
0.86 / 0.78 / 0.79 → 0.87 / 0.80 / 0.83, holdout7 0.86 / 0.86 / 0.81 → 0.86 / 0.90 / 0.84; no seen
set lost a turn. holdout9, unseen: 0.95 / 0.81 / 0.64 / 0.98 → 0.95 / 0.81 / 0.66 / 0.98.

Then an outside attack (120 crafted turns) found false closes: a thanks or a cheer after a snag, a
wish or a negation ("换了信道还是掉 谢谢", "now it throws a 500 🎉", "not ordered yet, thx", "字数控制在
50字以内 先谢了"), "X it is not", and false switches on a "btw" after a sentence. Those close or
switch no more (`topics._SNAG`, `_SWITCH_AFTER`: after a sentence, only a cue of another matter such
as "unrelated"); holdout7 0.86 / 0.90 / 0.84 → 0.86 / 0.88 / 0.83 ("来不及了 那就先去办个临时的 多谢"
reads as a snag), every other set unchanged. A detail given with thanks in advance ("budget is about
50 bucks, thx") still closes: no rule tells it from a close.

`--data bench/data/topics_holdout10.json`: a tenth holdout of 24 sessions (12 Chinese, 12 English;
254 user turns: a rabbit off its food, a lost parcel, uric acid, a thyroid nodule, crontab, a
Xinjiang road trip, kombucha, GitHub Actions caching, tennis elbow, a Zelle scam, towing with a
Subaru, a wasp nest…), written apart in the same way (the first two sessions of
`topics_holdout9.json` read for the format) and not read while tuning. Run first before round 12:
0.97 / 0.70 / 0.63 / 0.99.

Round 12 (2026-11-29) read `topics_holdout9.json`'s mistakes: a turn that ends by deciding, thanking
or saying it is final closes whatever it said before ("那就云杉坪+蓝月谷 定了", "他自己算出来了 太感谢了
😄"; `closing.closing_tail`), also when it answers the assistant's question, unless what comes before
asks, orders, tells of a snag or negates; leaving closes ("ok cool, gotta run to a meeting"), as do
"that's enough to get me started" and "够用了"; "going with 5mm. casting on tonight" decides (an
"-ing" after "going with" is no next step); after a close, whatever the user brings up next starts
the next task however short ("年会我们部门要出个节目 没人想演"); a request with its thing first
("论文题目帮我翻成英文") is a request; "下次" is a time for a next step ("👍 下次试试"), "那先买200G的吧"
decides, "第二个吧 已经发她了" reports it done. After an outside attack: "brb" closes nothing, nor a
thanks after a question asked without "?" ("还有酒店推荐吗 谢谢") or after an answer to the
assistant's question ("I only have 5mm, thanks"), nor a close followed by a fault ("…写错了").
holdout9 (now read) 0.95 / 0.81 / 0.66 / 0.98 → 0.96 / 0.90 / 0.81 / 0.98; holdout5 0.94 / 0.90 / 0.91 / 0.97 → 0.96 / 0.92 / 0.91 / 0.98, holdout6 0.87 / 0.80 /
0.83 → 0.87 / 0.83 / 0.85, holdout8 0.97 / 0.90 / 0.84 → 0.97 / 0.93 / 0.86; holdout7 0.86 → 0.84
switch precision (a closing turn missed after a close now reads as a new task). holdout10, unseen:
0.97 / 0.70 / 0.63 / 0.99 → 0.97 / 0.70 / 0.70 / 0.99. Tried and dropped: a yes/no question sharing
no word with the task switches (switch precision fell on every set, holdout10's 0.97 → 0.92, for
+0.02 recall); after a closing lead, a question in new words switches (precision fell on holdout3,
holdout4 and holdout9, no recall gained).

`--data bench/data/topics_holdout11.json`: an eleventh holdout of 24 sessions (12 Chinese, 12
English; 249 user turns: 高铁候补, 查重降重, 新房甲醛, 口腔溃疡, a vue component, 清迈, 份子钱, 雅思写作,
TypeScript's `satisfies`, iron pills, a lost bag in Peru, a new manager, eigenvectors, backyard
chickens, Croatia, bouldering…), written apart in the same way (the first two sessions of
`topics_holdout10.json` read for the format) and not read while tuning. Run first before round 13:
0.96 / 0.55 / 0.58 / 0.98.

Round 13 (2026-11-29) read `topics_holdout10.json`'s mistakes: a cue of another matter said first
wins over a variant asked of the new matter ("哦对了 …能给我几个高级点的句子吗"), and a Chinese
interjection needs no mark before it ("哦对了"); "问个别的" announces another matter wherever it
stands ("…趁这功夫问个别的 旧手机…"); after a closing lead, "anyway" and new words switch ("privacy
screen it is 😂 anyway tasted the kombucha…"); "typescript question: how do I…" frames a question;
a turn ending in thanks closes at up to twice the length of other next steps, and to anyone
("Thank you, dear.", "thanks coach"); "enough for today", "that's enough to get me going", "We'll
do that.", "我去做题了" close. holdout10 (now read) 0.97 / 0.70 / 0.70 / 0.99 → 0.97 / 0.85 / 0.77 /
0.99; every other seen set unchanged. holdout11, unseen: 0.96 / 0.55 / 0.58 / 0.98 before and after —
the round's rules did not carry to its sessions.

"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import numpy as np  # noqa: E402
from common import console, llm_only, llm_settings, load_cache, save_cache, table, write_result  # noqa: E402

from memlane import Config, Memory  # noqa: E402
from memlane.embeddings import Embedder, make_embedder  # noqa: E402
from memlane.embeddings.base import normalise  # noqa: E402
from memlane.indexing import content_hash  # noqa: E402

DATA = Path(__file__).parent / "data" / "topics.json"


def predicted(before: str, after: str) -> str:
    """A new focus is a switch, also where the last task was done already (none to archive)."""
    if after == before:
        return "continue"
    return "done" if not after else "switch"


class _Count(logging.Handler):
    """Counts the warnings of `memlane.topics`: each is a turn the LLM gave no verdict on."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def run(path: Path = DATA, llm_env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every session of the set through one progressive `Memory` (a user each); offline unless
    `llm_env` holds the MEMLANE_LLM_* settings."""
    sessions = json.loads(path.read_text(encoding="utf-8"))["sessions"]
    home = Path(tempfile.mkdtemp(prefix="memlane-topics-"))
    mem = Memory(Config.load("progressive", env=llm_only(llm_env), store={"home": str(home)},
                             embedding={"provider": "hash", "background": False},
                             extraction={"every_n_user_messages": 0}))
    fell_back = _Count()  # turns the LLM gave no verdict on (the rules decided them)
    told = logging.getLogger("memlane.topics")
    # counted from the warnings, whatever level another caller left on "memlane" (bench/reliability.py)
    level = told.level
    told.setLevel(logging.WARNING)
    told.addHandler(fell_back)
    rows: list[dict[str, Any]] = []
    for s in sessions:
        user = f"topics-{s['id']}"
        since: int | None = None  # the turn that set the current focus (`--similarity` reads it)
        for i, turn in enumerate(s["turns"]):
            before = mem.scratchpad(user_id=user).current_focus
            mem.add_messages(s["id"], [{"role": turn["role"], "content": turn["content"]}], user_id=user)
            if turn["role"] == "user":
                got = predicted(before, mem.scratchpad(user_id=user).current_focus)
                rows.append({"lang": s["lang"], "label": turn["label"], "got": got, "text": turn["content"],
                             "task": [t["content"] for t in s["turns"][since:i]] if since is not None else []})
                since = i if got == "switch" else None if got == "done" else since
    usage = list(getattr(mem.llm, "usage", []))
    told.removeHandler(fell_back)
    told.setLevel(level)
    mem.close()
    out: dict[str, Any] = {"turns": len(rows)}
    if mem.llm is not None:
        out["llm"] = {"calls": len(usage), "fell_back": fell_back.count,
                      "tokens": sum(u.total_tokens for u in usage),
                      "seconds_p50": sorted(u.seconds for u in usage)[len(usage) // 2] if usage else None}
    for lang in ("all", "zh", "en"):
        rs = [r for r in rows if lang == "all" or r["lang"] == lang]
        said_switch = [r for r in rs if r["got"] == "switch" and r["label"] != "start"]
        switches = [r for r in rs if r["label"] == "switch"]
        done = [r for r in rs if r["label"] == "done"]
        cont = [r for r in rs if r["label"] == "continue"]
        out[lang] = {
            "switch_precision": sum(r["label"] == "switch" for r in said_switch) / len(said_switch) if said_switch else 0.0,
            "switch_recall": sum(r["got"] == "switch" for r in switches) / len(switches) if switches else 0.0,
            "done_recall": sum(r["got"] == "done" for r in done) / len(done) if done else 0.0,
            "continue_kept": sum(r["got"] == "continue" for r in cont) / len(cont) if cont else 0.0,
            "counts": {k: sum(r["label"] == k for r in rs) for k in ("start", "continue", "switch", "done")},
        }
    out["errors"] = [{k: v for k, v in r.items() if k != "task"} for r in rows
                     if r["label"] != "start" and r["label"] != r["got"]]
    out["rows"] = rows
    return out


def _vectors(embedder: Embedder, texts: list[str], query: bool) -> dict[str, np.ndarray]:
    """`texts` embedded as passages or as queries, through the bench's cache between runs."""
    cached = load_cache(embedder.model_id)
    key = {t: ("q:" if query else "") + content_hash(t) for t in texts}
    todo = [t for t in texts if key[t] not in cached]
    for i in range(0, len(todo), 64):
        cached.update(zip((key[t] for t in todo[i:i + 64]), embedder.embed(todo[i:i + 64], query=query), strict=True))
    if todo:
        save_cache(embedder.model_id, cached)
    return {t: cached[key[t]] for t in texts}


def similarity(rows: list[dict[str, Any]], embedder: Embedder) -> dict[str, Any]:
    """How well the embedder tells a switch from a follow-up by its similarity to the task at hand
    (the turns since the current focus was set, as the rules ran): per variant — passage or "query: "
    prefix, max, mean or centroid over the task's turns — the AUC, the chance that a switch is less
    similar to its task than a follow-up (0.5: no signal), over every turn with a task current and
    over the turns the rules keep (what a "far from the task" switch could add); and, there, the
    follow-ups below each similarity cut that turns 1, 3 or 5 missed switches into switches; over the
    turns the rules switch (what "close to the task" could keep), the true switches above each cut
    that keeps the 1, 3 or 5 most similar false switches going."""
    scored = [r for r in rows if r["task"] and r["label"] in ("switch", "continue")]
    texts = sorted({r["text"] for r in scored} | {t for r in scored for t in r["task"]})
    out: dict[str, Any] = {"model": embedder.model_id, "turns": len(scored)}
    for query in (False, True):
        vec = _vectors(embedder, texts, query)
        for how in ("max", "mean", "centroid"):
            sims = []
            for r in scored:
                task = np.stack([vec[t] for t in r["task"]])
                if how == "centroid":
                    sims.append(float(normalise(task.mean(axis=0))[0] @ vec[r["text"]]))
                else:
                    cos = task @ vec[r["text"]]
                    sims.append(float(cos.max() if how == "max" else cos.mean()))
            name = f"{'query' if query else 'passage'} {how}"
            for among in ("all", "kept", "switched"):
                pairs = sorted((s, r["label"]) for s, r in zip(sims, scored, strict=True)
                               if among == "all" or r["got"] == {"kept": "continue", "switched": "switch"}[among])
                sw = np.array([s for s, label in pairs if label == "switch"])
                co = np.array([s for s, label in pairs if label == "continue"])
                auc = float((sw[:, None] < co[None, :]).mean()) if len(sw) and len(co) else float("nan")
                cuts = {}
                for n in (1, 3, 5):
                    if among == "kept" and len(sw) >= n:
                        cuts[f"lost for {n}"] = int((co <= np.sort(sw)[n - 1]).sum())
                    elif among == "switched" and len(co) >= n:  # switches lost to keep the n most similar follow-ups
                        cuts[f"lost for {n}"] = int((sw >= np.sort(co)[-n]).sum())
                out[f"{name} / {among}"] = {"auc": round(auc, 3), "switches": len(sw), "follow_ups": len(co), **cuts}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--show", type=int, default=0, help="print the first N mistakes")
    ap.add_argument("--llm", action="store_true", help="the LLM judges each turn, on MEMLANE_LLM_BASE_URL")
    ap.add_argument("--similarity", action="store_true",
                    help="also measure how well the default embedder tells switches from follow-ups")
    args = ap.parse_args(argv)
    settings = llm_settings() if args.llm else None
    if args.llm and settings is None:
        return 2
    res = run(Path(args.data), llm_env=settings)
    judge = f"LLM {settings.get('MEMLANE_LLM_MODEL', '')}".strip() if settings else "offline"
    res["judge"] = judge
    console.print(table(f"Topic switches (progressive profile, {judge})",
                        ["language", "switch precision", "switch recall", "done recall", "follow-ups kept", "turns"],
                        [[lang, res[lang]["switch_precision"], res[lang]["switch_recall"], res[lang]["done_recall"],
                          res[lang]["continue_kept"], sum(res[lang]["counts"].values())] for lang in ("all", "zh", "en")]))
    by: dict[str, int] = defaultdict(int)
    for e in res["errors"]:
        by[f"{e['label']} → {e['got']}"] += 1
    console.print("mistakes: " + (", ".join(f"{k}: {v}" for k, v in sorted(by.items())) or "none"))
    if "llm" in res:
        console.print(f"LLM: {res['llm']['calls']} calls, {res['llm']['tokens']} tokens; "
                      f"{res['llm']['fell_back']} turns left to the rules (no verdict)")
    for e in res["errors"][: args.show]:
        console.print(f"  [{e['lang']}] {e['label']} → {e['got']}: {e['text'][:90]}")
    rows = res.pop("rows")
    if args.similarity:
        res["similarity"] = sim = similarity(rows, make_embedder(Config.load("progressive").embedding))
        console.print(table(f"Similarity to the task ({sim['model']}): switches vs follow-ups",
                            ["variant / turns", "AUC", "switches", "follow-ups", "lost for 1", "lost for 3", "lost for 5"],
                            [[k, v["auc"], v["switches"], v["follow_ups"], v.get("lost for 1", ""),
                              v.get("lost for 3", ""), v.get("lost for 5", "")]
                             for k, v in sim.items() if isinstance(v, dict)]))
    console.print(f"wrote {write_result('topics-llm' if settings else 'topics', res)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
