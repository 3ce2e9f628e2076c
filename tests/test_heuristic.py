"""The offline extractor: Chinese and English statements → the same operations the LLM gives,
plus the user's own "remember / forget" (seed 001 §6 phase 1.5) in both modes."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from importlib import resources

import pytest

from memlane import Config
from memlane.dates import upcoming
from memlane.heuristic import HeuristicExtractor, conjugated, third_person
from memlane.importers import parse
from memlane.models import Turn
from memlane.testing import ScriptedLLM

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def extract(text: str, profile: str = "default") -> list[tuple[str, str, float]]:
    turns = [Turn(id="t1", user_id="u", session_id="s", seq=1, role="user", content=text, created_at=NOW,
                  token_count=1)]
    ops = HeuristicExtractor(Config.load(profile)).extract(turns, now=NOW).operations
    assert all(op.op == "ADD" and op.source == "heuristic" for op in ops)
    return [(op.content or "", op.category or "", op.score or 0) for op in ops]


@pytest.mark.parametrize(("text", "expected"), [
    ("我对花生过敏，别推荐花生酱", [("用户对花生过敏", "fact", 0.8)]),
    ("你好，我叫林晓。", [("用户叫林晓", "fact", 0.8)]),
    ("我喜欢喝白茶", [("用户喜欢喝白茶", "preference", 0.6)]),
    ("我比较喜欢安静的咖啡馆", [("用户比较喜欢安静的咖啡馆", "preference", 0.6)]),
    ("我讨厌香菜", [("用户讨厌香菜", "preference", 0.6)]),
    ("我不吃辣", [("用户不吃辣", "preference", 0.8)]),
    ("我从来不喝酒", [("用户从来不喝酒", "preference", 0.8)]),
    ("下周三要做产品评审", [("用户下周三要做产品评审", "todo", 0.8)]),
    ("我下个月要去东京出差", [("用户下个月要去东京出差", "todo", 0.8)]),
    ("我家里养了一只橘猫，叫橘子", [("用户家里养了一只橘猫，叫橘子", "fact", 0.6)]),
    ("My name is Lin Xiao.", [("The user's name is Lin Xiao.", "fact", 0.8)]),
    ("I prefer pytest over unittest, so use it in samples.", [("The user prefers pytest over unittest.", "preference", 0.6)]),
    ("I'm allergic to peanuts.", [("The user is allergic to peanuts.", "fact", 0.8)]),
    ("I don't eat spicy food anymore, doctor's advice.", [("The user does not eat spicy food.", "preference", 0.8)]),
    ("I hate cilantro", [("The user dislikes cilantro.", "preference", 0.6)]),
    ("Next week I have to prepare the demo slides.", [("The user has to prepare the demo slides.", "todo", 0.8)]),
    ("I'm training for a half marathon, so I run every Tuesday morning.",
     [("The user is training for a half marathon.", "fact", 0.6),
      ("The user runs every Tuesday morning.", "workflow", 0.6)]),
    # nothing stated about the user: nothing remembered
    ("今天天气不错", []),
    ("我忘了带钥匙", []),
    ("What's the weather like?", []),
    ("I'd like a cup of coffee", []),
])
def test_statements(text, expected):
    got = extract(text)
    assert [(c, cat, pytest.approx(s)) for c, cat, s in expected] == got


def test_categories_map_onto_the_profile(tmp_path):
    # seed 004's four categories: a preference stays, a fact becomes knowledge, a todo too
    got = {c: cat for c, cat, _ in extract("我对花生过敏。我喜欢喝白茶。下周三要做产品评审", "consolidator")}
    assert got == {"用户对花生过敏": "knowledge", "用户喜欢喝白茶": "preference", "用户下周三要做产品评审": "knowledge"}


def test_offline_end_session_extracts_with_source_heuristic(memory):
    memory.add_messages("s1", [{"role": "user", "content": "我对花生过敏，别推荐花生酱"},
                               {"role": "assistant", "content": "记下了"}], user_id="u1")
    [result] = [r for r in memory.end_session("s1", user_id="u1") if r.action == "extract"]
    assert result.result.extractor == "heuristic"
    [m] = memory.list(user_id="u1")
    assert (m.content, m.source, m.score) == ("用户对花生过敏", "heuristic", 0.8)
    assert [h.content for h in memory.search("过敏", user_id="u1")] == ["用户对花生过敏"]


@pytest.mark.parametrize("with_llm", [False, True])
def test_remember_makes_a_pinned_verified_user_memory_at_once(make_memory, with_llm):
    m = make_memory()
    if with_llm:
        m.llm = ScriptedLLM()  # never called: commands do not wait for the LLM
    m.add_messages("s1", [{"role": "user", "content": "记住：我的经理叫Priya，她每周五看我的幻灯片"}], user_id="u1")
    [mem] = m.list(user_id="u1")
    assert mem.content == "用户的经理叫Priya，她每周五看用户的幻灯片"
    assert (mem.source, mem.pinned, mem.verified, mem.score) == ("user", True, True, 0.8)
    m.add_messages("s1", [{"role": "user", "content": "Remember that my daughter's school starts at 8."}],
                   user_id="u1")
    assert "The user's daughter's school starts at 8." in [x.content for x in m.list(user_id="u1")]
    if with_llm:
        assert m.llm.calls == []


def test_remember_this_refers_to_the_previous_message(memory):
    memory.add_messages("s1", [{"role": "user", "content": "我的护照号码放在书房第二个抽屉"},
                               {"role": "user", "content": "记住这个"}], user_id="u1")
    assert [x.content for x in memory.list(user_id="u1") if x.pinned] == ["用户的护照号码放在书房第二个抽屉"]


def test_forget_deletes_matching_memories_at_once(memory):
    cat = memory.add("用户家里养了一只橘猫，叫橘子", user_id="u1", source="extractor")
    tea = memory.add("用户喜欢喝白茶", user_id="u1")
    memory.add_messages("s1", [{"role": "user", "content": "请忘掉我养猫的事"}], user_id="u1")
    assert [x.id for x in memory.list(user_id="u1")] == [tea.id]
    [_, ev] = memory.history(cat.id, user_id="u1")
    assert ev.kind == "DELETE" and ev.actor == "extract:user" and "忘掉" in ev.reason
    assert len(memory.get_turns("s1", user_id="u1")) == 1  # the conversation itself stays
    memory.add("The user prefers pytest over unittest.", user_id="u1")
    memory.add_messages("s2", [{"role": "user", "content": "Please forget that I prefer pytest."}], user_id="u1")
    assert [x.id for x in memory.list(user_id="u1")] == [tea.id]


def test_forget_report_lists_what_was_deleted_and_what_matched_nothing(memory):
    from memlane.importers import Conversation

    tea = memory.add("用户喜欢喝白茶", user_id="u1", pinned=True)
    memory.import_conversations([Conversation(session_id="s1", messages=[  # imports trigger nothing
        {"role": "user", "content": "忘掉我喜欢白茶这件事"},
        {"role": "user", "content": "Forget my bank password."},
    ])], user_id="u1")
    report = memory.extract("s1", user_id="u1")
    assert [m.id for m in report.deleted] == [tea.id]  # the user may delete even a pinned memory
    assert report.unmatched_forgets == ["my bank password"]
    assert memory.list(user_id="u1") == []


def test_sample_conversation_yields_sensible_memories_offline(memory):
    data = json.loads(resources.files("memlane.data").joinpath("sample_conversation.json").read_text("utf-8"))
    convs = parse(data, "sample_conversation.json")
    memory.import_conversations(convs, user_id="lin")
    for c in convs:
        memory.end_session(c.session_id, user_id="lin")
    got = {m.content for m in memory.list(user_id="lin")}
    for expected in ("用户叫林晓", "用户对花生过敏", "The user prefers pytest over unittest.",
                     "The user does not eat spicy food."):
        assert expected in got
    assert any("白茶" in c for c in got) and any("Priya" in c for c in got) and any("产品评审" in c for c in got)
    assert len(got) >= 10
    pinned = [m for m in memory.list(user_id="lin") if m.pinned]
    assert [m.source for m in pinned] == ["user"]  # "Remember that my manager's name is Priya…"


# ---- issue 29: one fact per clause, subjects kept, plans dated, nothing from small talk ------

JAN = datetime(2026, 1, 10, 9, tzinfo=UTC)  # a Saturday


def said(*messages: str, at: datetime = JAN) -> list[tuple[str, str, datetime | None]]:
    """(content, category, expires_at) of what a conversation yields; "A:" marks the assistant."""
    turns = [Turn(id=f"t{i}", user_id="u", session_id="s", seq=i + 1,
                  role="assistant" if m.startswith("A:") else "user", content=m.removeprefix("A:"),
                  created_at=at, token_count=1) for i, m in enumerate(messages)]
    ops = HeuristicExtractor(Config.load()).extract(turns, now=at).operations
    return [(op.content or "", op.category or "", op.expires_at) for op in ops if op.op == "ADD"]


def contents(*messages: str, at: datetime = JAN) -> list[str]:
    return [c for c, _, _ in said(*messages, at=at)]


def test_each_clause_is_a_fact_with_its_subject_carried_in():
    assert set(contents("我不吃香菜，也对芒果过敏")) == {"用户不吃香菜", "用户对芒果过敏"}
    assert contents("My name is Ming and I work as a data engineer at Acme") == [
        "The user's name is Ming.", "The user works as a data engineer at Acme."]
    assert contents("My brother lives in Austin and works as a nurse.") == [
        "The user's brother lives in Austin.", "The user's brother works as a nurse."]
    assert contents("我女儿今年上一年级了，她特别喜欢画画") == ["用户的女儿今年上一年级了", "用户的女儿特别喜欢画画"]


def test_a_name_is_kept_whole_and_only_a_name():
    assert contents("my name is Mary Ann Lee and i love tea") == ["The user's name is Mary Ann Lee.", "The user likes tea."]
    assert contents("Call me maybe") == []
    # "叫旺财" names the dog the clause before introduced, not the user
    assert contents("我养了条金毛，叫旺财，三岁了") == ["用户养了条金毛，叫旺财，三岁了"]


def test_a_clause_that_only_goes_on_joins_the_fact_before_it():
    [trip] = contents("下周三我要去北京出差，大概待三天，周五晚上回来")
    assert "北京出差" in trip and "待三天" in trip


def test_she_and_he_name_the_person_the_user_named_before():
    got = contents("my sister's wedding is in April, I'm the maid of honour", "A:Congrats!",
                   "her name's Priya and her fiancé is Tom")
    assert "The user's sister's name's Priya." in got and "The user's sister's fiancé is Tom." in got


@pytest.mark.parametrize("messages", [
    ["在吗", "A:在的", "哈哈没事，随便聊聊"],
    ["今天好热啊，不想出门"],
    ["帮我写一首关于秋天的诗", "A:好的", "不错，再短一点"],
    ["把这句话翻译成日语：我明天要去东京出差"],
    ["我朋友的表哥在新西兰养羊，结果他对羊毛过敏", "A:哈哈", "后来听说他改养奶牛了"],
    ["如果我中了五百万，你觉得我该先买房还是先辞职？"],
    ["hi, how are you", "A:Great!", "haha ok, just checking you're alive"],
    ["my friend's cousin is allergic to cats and she just adopted two kittens", "A:Oh no", "she says she'll be fine"],
    ["Can you proofread this? 'I am allergic to nuts and I live in Oslo.'"],
    ["translate this: I am moving to Tokyo tomorrow"],
    ["I'm so tired today"],
    ["ugh this code won't compile, can you look at it?"],
])
def test_small_talk_questions_requests_and_other_peoples_news_yield_nothing(messages):
    assert contents(*messages) == []


def test_a_plan_is_kept_until_the_day_it_names_plus_a_margin():
    [(race, cat, until)] = said("Training for a half marathon in March")
    assert race == "The user is training for a half marathon in March."
    assert until == datetime(2026, 4, 8, tzinfo=UTC)  # March 31 + 7 days (extraction.plan_margin_days)
    [(_, cat, until)] = said("下周三我要做产品评审")
    assert cat == "todo" and until == datetime(2026, 1, 22, tzinfo=UTC)  # Wednesday 14th + 7
    # said elsewhere in the message, the date still counts, and is said
    [(race, _, until)] = said("I'm training for the Berlin half marathon. It's at the end of August.")
    assert "(by August 31)" in race and until == datetime(2026, 9, 8, tzinfo=UTC)


def test_today_s_condition_lasts_the_day_and_a_relative_day_in_a_lasting_fact_is_dated():
    [(sick, _, until)] = said("我今天嗓子发炎了，请了一天假在家")
    assert sick.startswith("用户今天嗓子发炎了") and until == datetime(2026, 1, 11, tzinfo=UTC)
    assert contents("我明天生日，要30岁了") == ["用户明天（1月11日）生日，要30岁了"]


def test_a_correction_keeps_only_the_corrected_value():
    got = contents("my sister's wedding is on the 11th of April", "A:Lovely!", "wait sorry, it's the 18th not the 11th")
    assert got == ["The user's sister's wedding is on the 18th of April."]
    assert contents("I'm in Seattle", "A:Try Kizuki.", "I live in Portland, Oregon, not Seattle") == [
        "The user lives in Portland, Oregon, not Seattle."]
    assert contents("我住北京海淀", "A:好的", "不对，我是在上海不是北京，现在住徐汇") == ["用户是在上海不是北京，现在住徐汇"]


def test_a_corrected_command_is_forgotten_and_remembered_anew(memory):
    memory.add_messages("s1", [{"role": "user", "content": "帮我记一下，下周一下午3点和房东谈续租的事"},
                               {"role": "assistant", "content": "记下了"},
                               {"role": "user", "content": "哦不对，是下周二，不是周一"}], user_id="u1")
    memory.end_session("s1", user_id="u1")
    [m] = memory.list(user_id="u1")
    assert m.content == "下周二下午3点和房东谈续租的事" and m.pinned and m.source == "user"


def test_standing_rules_and_answers_to_the_assistant_s_questions():
    assert contents("以后回答我都用中文吧，别夹英文单词") == ["用户要求：以后回答用户都用中文吧", "用户要求：别夹英文单词"]
    assert contents("from now on always answer me in Chinese, even if I write in English") == [
        "The user asks: from now on always answer the user in Chinese, even if the user writes in English."]
    # a bare answer takes its predicate from the question (issue 29, holdout3)
    assert contents("A:What's the role?", "product designer, fully remote") == [
        "The user's role is product designer, fully remote."]
    assert contents("A:你在哪个城市？", "成都") == ["用户在成都"]


def test_a_short_quoted_word_is_the_user_s_a_quoted_passage_is_not():
    assert contents("from now on don't call me 'sport', I find it odd") == [
        "The user asks: from now on don't call the user 'sport'."]
    assert contents("Can you check this: 'I have lived in Rome since 2019. I love it.' Thanks") == []


def test_a_person_named_in_passing_is_kept_apart_from_the_plan():
    got = said("我和男朋友阿杰下个月要去日本玩")
    assert ("用户的男朋友叫阿杰", "fact", None) in got
    assert any(c.startswith("用户和男朋友阿杰下个月要去日本玩") and cat == "todo" and until for c, cat, until in got)


# ---- generality: kin, dislikes, introductions, chatter, English verbs ------------------------

@pytest.mark.parametrize(("verb", "expected"), [
    ("work", "works"), ("works", "works"), ("watch", "watches"), ("study", "studies"), ("go", "goes"),
    ("do", "does"), ("have", "has"), ("am", "is"), ("are", "is"), ("were", "was"), ("don't", "doesn't"),
    ("haven't", "hasn't"), ("can", "can"), ("wouldn't", "wouldn't"), ("been", "been"), ("miss", "misses"),
    ("focus", "focuses"), ("listen", "listens"), ("fly", "flies"), ("enjoy", "enjoys"),
])
def test_a_verb_after_the_user_agrees_with_it(verb, expected):
    assert conjugated(verb) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("I'm a nurse", "The user is a nurse."),
    ("I've got two kids", "The user has got two kids."),
    ("I'd rather take the train", "The user would rather take the train."),
    ("I'll be there", "The user will be there."),
    ("I kinda like tennis", "The user kinda likes tennis."),
    ("I kind of miss Berlin", "The user kind of misses Berlin."),
    ("I fly to Oslo on Monday", "The user flies to Oslo on Monday."),
    ("I really don't like olives", "The user really doesn't like olives."),
    ("I can swim", "The user can swim."),
    ("I works nights", "The user works nights."),
])
def test_first_person_reads_in_the_third(text, expected):
    assert third_person(text) == expected


def test_kin_said_the_short_way_keeps_its_facts_apart_from_the_user_s():
    got = contents("我爸有高血压，想给他买个血压计，哪个牌子好")
    assert got == ["用户爸有高血压"]  # not the user's blood pressure; the wish to buy is the moment's
    assert contents("老妈最近在学游泳") == ["用户的老妈最近在学游泳"]
    got = contents("五一打算带爸妈去杭州，他们膝盖不好爬不了山，帮我规划一下")
    assert "用户爸妈膝盖不好爬不了山" in got
    assert contents("my partner Sam is vegetarian") == ["The user's partner Sam is vegetarian."]
    come, allergy = contents("我外甥小宇下周来我家，他对芒果过敏")
    assert "外甥小宇下周" in come and allergy == "用户外甥小宇对芒果过敏"


@pytest.mark.parametrize(("text", "word"), [
    ("I'm not really a fan of jazz", "dislikes jazz"), ("not into horror movies tbh", "dislikes horror movies"),
    ("I don't really care for sushi", "dislikes sushi"), ("honestly can't stand mornings", "dislikes mornings"),
    ("I never liked cilantro", "dislikes cilantro"), ("我受不了香菜的味道", "受不了香菜"),
    ("我吃不了辣", "吃不了辣"), ("我对足球一直不感冒", "对足球不感兴趣"),
])
def test_a_dislike_in_its_many_phrasings(text, word):
    [memory] = contents(text)
    assert word in memory


def test_self_introductions_in_several_forms():
    assert contents("hey! I'm Tom Baker, a nurse in Leeds.") == ["The user's name is Tom Baker.",
                                                               "The user is a nurse in Leeds."]
    assert contents("name's Dave btw") == ["The user's name is Dave."]
    assert contents("I go by Sam.") == ["The user goes by Sam."]
    assert contents("大家都叫我小胖") == ["大家叫用户小胖"]


def test_facts_said_before_a_question_are_kept():
    assert contents("I'm lactose intolerant, any dessert ideas?") == ["The user is lactose intolerant."]
    assert contents("咖啡戒了，特别爱喝奶茶，有没有低糖的推荐") == ["用户：咖啡戒了", "用户特别爱喝奶茶"]
    assert contents("家里有鸡蛋和番茄，做啥好") == []  # what is at hand only sets the question


def test_a_correction_naming_only_the_right_day_replaces_the_day_said():
    got = contents("my dentist appointment is on the 12th", "A:Noted.", "correction: it's the 14th, I mixed it up")
    assert got == ["The user's dentist appointment is on the 14th (January 14)."]
    got = contents("下周五是我爸生日", "A:好的", "不是不是，是下周六，1月17号，我记错了")
    assert got == ["下周六，1月17号是用户爸生日"]


@pytest.mark.parametrize("messages", [
    ["I'm trying to fix this bug where the login fails"],
    ["Can you help? I'm getting a null pointer exception in my Java code"],
    ["这段代码老是报错，帮我看看"],
    ["I need to fix the tests before I push"],
    ["He watches movies every night."],
    ["my coworker told me he watches movies every night"],
    ["we went to the beach yesterday"],
    ["我们上周去海边玩了"],
    ["ok story time: my neighbour's ex-husband apparently sold his boat for a goat"],
    ["给你讲个笑话：我老公去买菜，结果买了一个西瓜回家。"],
    ["I need some ideas for dinner"],
    ["A:How's your day going?", "pretty busy honestly"],
    ["A:How are you finding the book?", "slow but fun"],
    ["A:Here you go.", "I'll try that"],
    ["interesting, thx"],
    ["translate 'good morning' into German", "A:Guten Morgen.", "and 'see you soon'"],
    ["我同事说他表弟也对花生过敏"],
    ["我觉得不专业"],
    ["想找几首适合婚礼的歌"],
    ["我邻居家的狗天天叫，烦死了"],
    ["我要是有钱就去环游世界"],
    ["A:需要我再改改吗？", "不用了，挺好的"],
    ["yeah I think so", "A:Great.", "sounds good, thanks!"],
    ["I love this answer"],
    ["我觉得你说得对"],
    ["My cat knocked over my coffee again this morning"],
    ["lol my dog would say thanks if he could"],
])
def test_task_chatter_other_people_and_the_moment_yield_nothing(messages):
    assert contents(*messages) == []


def test_a_request_tacked_on_and_a_missing_subject_are_read_as_meant():
    assert contents("We're vegetarian at home, so no meat recipes please") == [
        "The user and others are vegetarian at home."]
    assert contents("Finally got my PhD last week!") == ["The user got the user's PhD last week."]
    assert contents("Not a morning person at all lol") == ["The user is not a morning person at all."]
    assert contents("A:What kind of music do you like?", "mostly indie rock, some jazz") == [
        "The user likes mostly indie rock, some jazz."]  # the question's predicate (issue 29, holdout3)
    assert contents("我平时不怎么喝咖啡，喝了睡不着") == ["用户平时不怎么喝咖啡，喝了睡不着"]


def test_a_relative_s_plan_is_kept_until_its_day_and_a_quoted_letter_is_not_the_user():
    [(visit, cat, until)] = said("my sister is visiting from Chicago this weekend")
    assert visit.startswith("The user's sister is visiting") and cat == "todo"
    assert until == datetime(2026, 1, 19, tzinfo=UTC)  # Sunday 11th + 7 days
    assert contents("Can you proofread this? 'Dear Ms Reed, I'm fluent in French and I've led teams.'") == []


def test_they_and_he_name_the_kin_the_user_has():
    assert contents("my kids are 6 and 9", "A:Fun ages!", "they're both obsessed with Minecraft") == [
        "The user's kids are 6 and 9.", "The user's kids are both obsessed with Minecraft."]
    assert contents("I have a 3-year-old son named Leo", "A:Cute!", "he's allergic to dairy") == [
        "The user has a 3-year-old son named Leo.", "The user's son is allergic to dairy."]
    assert contents("我们家一般周日吃火锅") == ["用户家一般周日吃火锅"]  # every Sunday: no date added


def test_a_change_from_a_day_on_lasts_past_it():
    [(_, cat, until)] = said("thanks! means I'll be leading a team of 6 starting next month")
    assert cat == "fact" and until is None


@pytest.mark.parametrize(("text", "day"), [
    ("in March", date(2026, 3, 31)), ("next Wednesday", date(2026, 1, 14)), ("5月20号", date(2026, 5, 20)),
    ("下个月", date(2026, 2, 28)), ("下个月15号", date(2026, 2, 15)), ("on the 27th", date(2026, 1, 27)),
    ("明年三月", date(2027, 3, 31)), ("in two weeks", date(2026, 1, 24)), ("this weekend", date(2026, 1, 11)),
    ("next January", date(2027, 1, 31)), ("I was born on March 3, 1990", None), ("last March", None), ("我每周三跑步", None), ("I may go", None),
])
def test_upcoming_names_the_last_day_of_the_future_a_text_names(text, day):
    assert upcoming(text, JAN.date()) == day


# ---- issue 29, unseen chats: how people type, headings, offers, and what is no fact ----------

def test_a_value_mended_inside_its_sentence_is_kept_mended():
    assert contents("我女儿今年上二年级，哦不对，三年级了") == ["用户的女儿今年上三年级"]
    assert contents("我周四去青岛开会，呃说错了，是周五") == ["用户周五去青岛开会"]
    [flight] = contents("my flight is on the 4th no wait the 6th")
    assert "6th" in flight and "4th" not in flight
    assert contents("My cat is called Mochi - sorry, autocorrect - Mocha") == ["The user's cat is called Mocha."]


def test_a_heading_announces_and_says_nothing_itself():
    assert contents("Heads up: my gym closes at 8 now") == ["The user's gym closes at 8 now."]
    assert contents("先说明一下：我对猫毛过敏") == ["用户对猫毛过敏"]
    assert contents("Quick intro: Dana Reyes, pharmacist in Lyon.") == ["The user: Dana Reyes, pharmacist in Lyon."]
    assert contents("简单介绍下自己：王磊，28，杭州，做前端") == ["用户：王磊，28，杭州，做前端"]
    assert contents("Some facts about me:\n- lactose intolerant\n- two dogs, Pip and Olive") == [
        "The user: lactose intolerant.", "The user: two dogs, Pip and Olive."]
    assert contents("Name: Ravi Kumar") == ["The user's name is Ravi Kumar."]
    assert contents("职业：律师") == ["用户的职业是律师"]
    assert contents("My kids: Tom (6) and Ana (4)") == ["The user's kids are Tom (6) and Ana (4)."]
    assert contents("我的爱好：爬山、摄影") == ["用户的爱好是爬山、摄影"]


def test_chat_spellings_are_read_as_written_out():
    assert contents("im 30 and i cant stand olives") == ["The user is 30.", "The user dislikes olives."]
    assert contents("fav food is ramen tbh") == ["The user's favourite food is ramen."]


@pytest.mark.parametrize("messages", [
    ["A:Want me to make a shopping list too?", "maybe tomorrow"],
    ["A:Want a quick recap?", "go on"],
    ["A:需要我帮你订个餐厅吗？", "要的"],
    ["A:需要我推荐几家吗？", "好啊，要安静点的"],
])
def test_a_reply_to_an_offer_is_no_fact(messages):
    assert contents(*messages) == []


def test_how_to_answer_is_a_standing_rule_unless_it_is_for_today():
    assert contents("please use short sentences") == ["The user asks: use short sentences."]
    assert contents("你跟我说话简单点啊") == ["用户要求：跟用户说话简单点"]
    assert contents("我今天网不好，回复简短点") == []
    assert contents("today my connection is bad so keep answers short") == []


@pytest.mark.parametrize("messages", [
    ["我妈一直这么叫我"],
    ["先不聊这个"],
    ["今天真倒霉，早上地铁晚点，中午食堂的菜咸得我不行"],
    ["A:可以先列个提纲。", "思路还行"],
    ["人生真奇妙"],
    ["A:可以做红烧肉。", "红烧肉我会"],
    ["据说是隔壁老王养的，现在天天叫"],
    ["my phone decided to restart during the meeting"],
    ["I was thinking about the weekend"],
    ["I want to buy something"],
])
def test_pointers_the_day_s_story_verdicts_and_the_minute_s_plans_yield_nothing(messages):
    assert contents(*messages) == []


def test_what_is_said_around_a_fact_is_not_kept_with_it():
    assert contents("以后别叫我宝子，听着怪怪的") == ["用户要求：以后别叫用户宝子"]  # the reason for the rule
    assert contents("老弟啊，我跟你说，我在武汉上班") == ["用户在武汉上班"]  # a word of address
    assert contents("I lived in Rome for years. I still do.") == ["The user lived in Rome for years."]
    assert contents("my grandson Ben is 12", "A:Nice!", "Ben will be so proud") == [
        "The user's grandson Ben is 12."]  # a guess at how he will feel is no fact
    # a one-off told in the past is no fact (issue 29); who Ben is lasts (round 3, holdout5's "my husband Walt")
    assert contents("my grandson Ben fixed my printer") == ["The user's grandson is named Ben."]


def test_a_question_word_before_dou_or_ye_asks_nothing():
    assert contents("周末我哪也不去，在家看书") == ["周末用户哪也不去，在家看书"]
    assert contents("我什么都吃") == ["用户什么都吃"]
    assert contents("我最烦开长会") == ["用户最烦开长会"]


def test_clause_boundaries_a_lead_in_a_pair_of_subjects_and_a_consequence():
    assert contents("weird question but I really can't stand mushrooms") == ["The user dislikes mushrooms."]
    assert contents("it's the weekly quiz night me and my brother host at the pub") == []  # "me and my brother": one subject
    assert contents("grandpa passed away last spring so it's our first Christmas without him") == [
        "The user's grandpa passed away last spring."]
    assert contents("my cousin Lena is driving down from Leeds for it") == [
        "The user's cousin Lena is driving down from Leeds."]
    assert contents("Then on the way back it snowed and my bike chain snapped") == []  # a thing's one-off


def test_who_is_speaking_and_who_is_asked():
    assert contents("Hi there, this is Edith. I'm 79") == ["The user's name is Edith.", "The user is 79."]
    assert contents("avoid jargon, keep it brief, and never recommend I 'just relax'") == [
        "The user asks: avoid jargon, keep it brief, and never recommend the user 'just relax'."]
    assert contents("I'm Sofia, recently moved to Porto for a new job") == [
        "The user's name is Sofia.", "The user recently moved to Porto for a new job."]
    assert contents("I not like coffee") == ["The user not like coffee."]  # "not" is no verb to conjugate


def test_a_verdict_on_a_suggestion_and_an_output_asked_for_are_no_facts():
    assert contents("A:Maybe an early night and some tea?", "sounds perfect") == []
    assert contents("I need a weekly workout plan that fits around shifts") == []


def test_how_the_speaker_is_today_and_a_new_job_that_lasts():
    [(content, _, until)] = said("back from the dentist with a numb face today")
    assert content == "The user is back from the dentist with a numb face today." and until == JAN.replace(
        day=11, hour=0)
    [(_, cat, until)] = said("I'm starting at a small design studio in October")
    assert cat == "fact" and until is None


def test_chinese_said_without_punctuation_is_cut_where_a_new_subject_starts():
    got = contents("我跟你讲一下我们家大女儿下个月要去日本留学她对青霉素过敏你帮我查查那边看病贵不贵她不太会说日语")
    assert got == ["用户家大女儿下个月要去日本留学", "用户的女儿对青霉素过敏", "用户的女儿不太会说日语"]
    assert contents("我们俩都在杭州上班") == ["用户两人都在杭州上班"]


def test_an_aside_before_the_subject_and_the_moment_s_leftovers():
    assert contents("Fun fact, I'm moving to Lisbon in June for work") == [
        "The user is moving to Lisbon in June for work."]
    assert contents("what can I bake? something easy, I've got like 40 mins") == []
    assert contents("A:Try the lemon drizzle.", "nice, I'll bake it tomorrow") == []
    assert contents("A:猫狗各有所长。", "哈哈有道理") == []
    assert contents("假如我下个月辞职呢", "A:先存好半年的生活费。", "开个玩笑啦") == []
    assert contents("我爸天天在家看新闻，他以前喜欢下棋") == ["用户爸天天在家看新闻", "用户爸以前喜欢下棋"]


def test_words_quoted_inside_a_clause_are_kept_as_said():
    assert contents("never recommend I 'try cold showers' unless I ask, please") == [
        "The user asks: never recommend the user 'try cold showers' unless the user asks."]
    assert contents("my boss keeps saying 'we need to circle back on this' in every meeting") == [
        "The user's boss keeps saying 'we need to circle back on this' in every meeting."]
    assert contents("A:我可以问一下你在哪个城市吗？", "成都") == ["用户在成都"]  # a question, not an offer


def test_a_fact_said_in_a_day_s_story_or_beside_a_one_off_is_kept():
    assert contents("今天我生日，我今年30了") == ["用户今年30了"]
    assert contents("I love trying new things") == ["The user likes trying new things."]
    assert contents("my boyfriend proposed last night") == ["The user's boyfriend proposed last night."]


def test_who_we_are_and_whose_words_follow_a_verb_of_saying():
    assert contents("hii im Mia, 17, really into volleyball") == [
        "The user's name is Mia.", "The user is 17, really into volleyball."]
    assert contents("budget is tight, like 5k max") == ["The user's budget is tight, like 5k max."]
    assert contents("我们在一起做饭老吵架") == ["用户他们在一起做饭老吵架"]
    assert contents("我牙不好，牙医说不能吃太硬的，也不能喝太凉的") == ["用户牙不好"]


def test_kin_named_in_a_request_is_whom_he_means_and_asides_of_the_asker():
    assert contents("Can you write a toast for my mum? She's turning 70.") == ["The user's mum is turning 70."]
    assert contents("Not gonna lie I'm scared of heights") == ["The user is scared of heights."]
    assert contents("is a bee sting dangerous? asking for my neighbour's son. he's 6") == []


# ---- round 3 on unseen chat (holdout5 read): English recall, Chinese junk ----------------------


def test_facts_told_inside_a_request_are_the_user_s():
    assert contents("add that I'm in Portland, local pickup only") == ["The user is in Portland, local pickup only."]
    assert contents("write a short msg to my team: I'm OOO friday. keep it light") == ["The user is OOO friday."]
    assert contents("oh and mention the release moved to the 21st") == ["The release moved to the 21st."]
    assert contents("Priya's covering on-call for me") == ["Priya's covering on-call for the user."]


def test_a_fact_before_a_yes_no_question_or_a_doubt_and_after_a_marker_is_kept():
    assert contents("I'm 52, is that too late?") == ["The user is 52."]
    assert contents("my 1:1 with my manager is thursday, maybe I bring it up then") == [
        "The user's 1:1 with the user's manager is thursday."]
    assert contents("my dog Rex is 3", "no wait he turned 4 in december") == [
        "The user's dog Rex is 3.", "The user's dog Rex turned 4 in december."]


def test_bare_attributes_verdicts_and_what_the_user_goes_without():
    assert contents("budget 180 euros a night max") == ["The user's budget 180 euros a night max."]
    assert contents("CMU is the dream lol") == ["The user thinks CMU is the dream."]
    assert contents("planning meals for the week. no pork, no shellfish") == [
        "The user is planning meals for the week.", "The user: no pork, no shellfish."]
    assert contents("no worries") == []  # one "no X" is an idiom


def test_the_user_s_people_named_in_passing_are_kept_whoever_the_clause_is_about():
    assert contents("deer!! my husband Walt put up a fence and they just jump it") == ["The user's husband is named Walt."]
    assert contents("can you write an email to my flour supplier Hartley Mills?") == [
        "The user's flour supplier is named Hartley Mills."]
    assert contents("my coworker Dave keeps taking credit for my dashboards") == ["The user's coworker is named Dave."]
    assert contents("my buddy Dave is still on two packs a day") == []  # his news, not the user's


def test_a_pronoun_carried_into_the_next_clause_names_the_user_s_person():
    assert contents("my partner. she's the opposite, eats everything but hates cilantro with a passion")[-1] == (
        "The user's partner hates cilantro with a passion.")


def test_answers_to_choice_and_who_questions():
    assert contents("A:Sure — who's your contact there?", "Denise") == ["The user's contact there is Denise."]
    assert contents("A:Sorry to hear. How old is he, and what breed?", "beagle mix, 10") == ["The user: beagle mix, 10."]
    assert contents("A:You still have time for kale. Raised beds or in-ground?", "raised beds, three of them") == [
        "The user: raised beds, three of them."]
    assert contents("A:Anything eating your plants?", "deer") == ["The user: deer eating the user's plants."]


@pytest.mark.parametrize("messages", [
    ("在不 无聊死了",),  # 在不: "are you there?"
    ("出个谜语给我猜",),  # V 给我 V: a request
    ("嗯 我转告她 谢啦",),  # a one-off act on someone named elsewhere
    ("那高铁呢 高铁也不能开啊",),  # goes on with the question about 高铁
    ("A:答对了！再来一个：什么东西你走它也走，你停它也停？", "影子 太简单了"),  # a riddle's answer
])
def test_chinese_questions_requests_and_riddle_answers_leave_nothing(messages):
    assert contents(*messages) == []


# ---- issue 29, the holdout7 round: games, requests on the piece at hand, mends said bare -------

@pytest.mark.parametrize("messages", [
    ("我们来玩成语接龙，我先：一马当先", "A:先见之明", "明日黄花"),  # a game's moves are no facts
    ("quiz me on French verbs", "A:Être, first person plural?", "nous sommes"),
    ("用大白话讲讲区块链是什么", "A:就像一个大家一起记的账本……", "要具体的例子"),  # how to answer, for now
    ("我知道这个牌子，就是有点贵",),  # a reply about a thing the chat named
    ("这标题也太长了 哈哈",),  # a verdict on the piece at hand
    ("昨天面试官问我期望薪资",),  # someone's question to the user, told
    ("Can you write a toast for our team dinner?", "A:Sure, here it is…", "Keep it under 100 words. Don't mention the layoffs"),
])
def test_games_asks_for_now_and_replies_about_the_chat_leave_nothing(messages):
    assert contents(*messages) == []


def test_a_game_starts_where_it_is_proposed_and_earlier_facts_stay():
    assert contents("我对虾过敏。我们来玩飞花令吧", "A:好，带“花”字", "花开堪折直须折") == ["用户对虾过敏"]
    # a quiz for someone else is no game of the user's: their own facts around it are kept
    assert "用户的儿子叫乐乐" in contents("我儿子叫乐乐，你能出几道题给他练练吗")


def test_a_mend_said_bare_fixes_the_statement_before_it():
    got = contents("科目三下周二考", "A:加油！", "等下我看了眼通知 是下周三 不是周二")
    assert any("科目三" in c and "周三" in c for c in got) and not any("不是" in c or "周二" in c for c in got), got
    got = contents("我的座位是12A 哦不对 是21A")
    assert any("21A" in c for c in got) and not any("12A" in c for c in got), got


def test_the_doer_left_out_is_the_one_just_named_and_english_chat_forms():
    assert any("爸" in c and "带大" in c for c in contents("最感谢我爸，一个人把我带大"))
    assert contents("just got promoted to team lead") == ["The user just got promoted to team lead."]
    assert any("Target" in c for c in contents("I left my job at Target last month"))
    assert any("trying to learn guitar" in c and "with the user's son" in c
               for c in contents("tryna learn guitar w my son"))


# ---- the holdout8 round: would-answers, neighbours' news, choices, decisions not to -----------

@pytest.mark.parametrize("messages", [
    ("would you rather live by the sea or in the mountains", "A:The sea for me. You?", "I'd pick the mountains, I'd hike every day"),
    ("那要是只能去一个国家旅游呢 我去冰岛",),  # the answer to a what-if is no plan
    ("来玩猜灯谜", "A:好！“一口咬掉牛尾巴”", "告"),
    ("我们隔壁那家的猫又生了四只，天天叫",),  # the neighbours' news
    ("这个词用engineer还是developer好",),  # a choice asked without its question mark
    ("never mind, I'll check my notes",),  # a step of the moment
])
def test_would_answers_what_ifs_and_the_neighbours_news_leave_nothing(messages):
    assert contents(*messages) == []


def test_a_choice_picked_a_name_to_sign_and_a_decision_not_to_are_kept():
    assert contents("A:Are you going as a student, a parent, or a coach?", "coach") == ["The user is going as a coach."]
    assert "The user's name is Dana Whitfield." in contents("Sign it Dana Whitfield, CI/CT")
    [(content, category, expires)] = said("I will not be buying a motorbike, whatever my brother says")
    assert "motorbike" in content and expires is None  # a decision, not a plan that ends in a month
    [(content, _, expires)] = said("我今年退休了")
    assert expires is None  # 退休 is no 休假 plan ending with the year
    assert all(e is None for _, _, e in said("我之前在宝马实习过三个月"))  # what was done, not a plan
    assert contents("I teach physics at Lakeview High so add sub plans to my list") == [
        "The user teaches physics at Lakeview High."]


def test_pointers_bare_states_and_what_the_user_knows_of_other_things_leave_nothing():
    for message in ("I do this after work", "I'm off", "we're still finalizing", "I know Rome is all hills",
                    "I swear the waiter almost laughed", "my dog sitter just bailed", "先出车了", "早就习惯了"):
        assert contents(message) == [], message
    assert contents("I know how to sail") != []  # a skill is no reply about something else
    # "stop" with no gerund sets no rule for the assistant: the request is for now
    got = contents("I'm due in april so I stop in march. help me write a message in simple english")
    assert "The user is due in april." in got and not any(c.startswith("The user asks") for c in got), got


# ---- changes told as one's own story (issue 32's write path) ---------------------------------

def test_life_changes_told_as_we_or_as_a_story_are_kept():
    assert contents("We moved to Leeds last month.") == ["The user moved to Leeds last month."]
    assert contents("We finally bought a house!") == ["The user finally bought a house."]
    assert contents("Jake and I broke up.") == ["The user and Jake broke up."]
    assert contents("I sold my car.") == ["The user sold the user's car."]
    assert contents("我把车卖了") == ["用户把车卖了"] and contents("我把烟戒了") == ["用户把烟戒了"]
    # a day out stays a story, a task done stays done, a request on an ad stays a request
    for message in ("We went to the beach.", "Tom and I went to the beach yesterday.", "我把作业写完了",
                    "把这段卖货文案改一下"):
        assert contents(message) == [], message


def test_a_place_said_as_there_stays_with_the_place_and_a_new_person_s_name_is_theirs():
    assert contents("I moved to Berlin, I live there now.") == ["The user moved to Berlin and lives there now."]
    assert contents("I started at a bakery. I work there on weekends") == [
        "The user started at a bakery and works there on weekends."]
    assert not any("姓李" in c for c in contents("我换了个新医生，姓李"))  # the doctor's name, not the user's
    assert "用户是新来的实习生，姓王" in contents("我是新来的实习生，姓王")


# ---- the holdout9 round: the moment's feelings, replies to the chat, other people's words ------

@pytest.mark.parametrize("messages", [
    ("我自己也说不清",), ("我妈急得不行",),  # the moment's not knowing, someone's worry of the day
    ("A:可以：1. 先称呼名字 2. 说话慢 3. 主动问要求", "第三条我会加上"),  # an item of the assistant's list
    ("无聊 陪我玩成语接龙 我先来 一马当先",),  # the game asked for, a turn, a move
    ("华西那边顺便给我挂个风湿免疫科",),  # a booking asked of the assistant
    ("她说她老公一年回来两次 孩子都快不认识爸爸了",),  # still her words
    ("我们部门新来的实习生 北大的 第一天就把主管的PPT挑了一堆错",),  # a workmate's news
    ("I'm okay.",), ("his mom is freaking out about the loans, like $250k",), ("like 5 a day",), ("don't judge me",),
])
def test_moments_replies_to_the_chat_and_other_people_s_words_leave_nothing(messages):
    assert contents(*messages) == []


def test_names_titles_and_verbs_stay_whole():
    assert contents("my daughter Lucía is 10") == ["The user's daughter Lucía is 10."]
    assert "The user's mother-in-law is staying two weeks." in contents("My mother-in-law is staying two weeks.")
    assert any("okafor" in c for c in contents("my PI is dr. okafor"))
    assert contents("I mostly hand-build.") == ["The user mostly hand-builds."]
    assert "The user's cat Waffles has been under the couch for 3 days." in contents(
        "my cat Waffles hates the new place, he's been under the couch for 3 days")
    assert not any(c.startswith("The user asks") for c in contents("I don't eat lamb. never liked it"))
    assert "用户的孩子还小" in contents("我说我不去 孩子还小") and "用户妈给用户买了个新手机" in contents("我妈给我买了个新手机")


# ---- the holdout10 round: lead-ins, signatures, questions after an emoji, the moment's steps ----

def test_a_fact_after_a_lead_in_or_a_word_to_the_assistant_is_kept():
    assert contents("and before you suggest soba pairings or whatever, I'm allergic to buckwheat") == [
        "The user is allergic to buckwheat."]
    assert contents("problem is i don't have health insurance") == ["The user doesn't have health insurance."]
    assert contents("good. sign it 'Dom, Benedetto Lock & Key'") == ["The user's name is Dom."]
    assert contents("sign it Love, Mom") == []  # a closing, no name
    assert contents("I'm a deckhand trying to make tankerman.") == ["The user is a deckhand trying to make tankerman."]
    assert contents("my son's 14") == ["The user's son is 14."]


@pytest.mark.parametrize("messages", [
    ("换热器还没拆过",), ("耳鸣一个多月了 还没好", ), ("她不潜水 放心 哈哈",), ("考考我歇后语 来四个",),
    ("A:大雪一夜压檐低……胡萝卜鼻冻成瓜。", "最后一句没押韵 哈哈哈"),
    ("nice. I'll use that template.",), ("I'm trying to make this script run faster",),
    ("my son Max is mortified 😂 how do I get him to stop",),
])
def test_steps_of_the_moment_and_replies_to_the_assistant_leave_no_junk(messages):
    got = contents(*messages)
    assert not any(w in c for c in got for w in ("没拆过", "没好", "放心", "考考", "押韵", "template", "script", "gets him")), got


def test_a_text_pasted_to_work_on_is_not_the_user_speaking():
    notice = ("【关于电梯年检的通知】尊敬的各位业主：我物业定于3月5日上午9:00至12:00对1-3号电梯进行年检，届时电梯"
              "暂停使用，请各位业主合理安排出行。如有疑问请致电物业服务中心。")
    assert contents(f"这段太长了 帮我缩成两句话\n\n{notice}") == []
    assert contents("proofread this:\nDear residents, the pool will be closed for maintenance from June 2 to June 9. "
                    "We apologise for any inconvenience caused.") == []
    # the user's own words pasted for polish stay theirs
    assert "用户叫林晓" in contents("帮我润色一下我的自我介绍\n我叫林晓，在杭州做了八年护士，平时喜欢跑步和做饭，"
                                               "希望认识更多朋友")


def test_a_game_turn_and_a_friends_parents_news_leave_nothing():
    assert contents("哈哈 该我出了 一加一不是二 打一字") == []
    assert contents("我大学室友她爸退休了 在安吉开了个农家乐 生意特别好 周末都订满") == []


def test_still_and_not_yet_are_kept():
    assert contents("我还没搬到北京") == ["用户还没搬到北京"]  # not yet: it may still happen
    assert contents("我也对芒果过敏") == ["用户对芒果过敏"]  # "also" says nothing of the user


def test_a_job_said_as_x_here_and_a_clause_of_another_subject_after_and():
    assert contents("arborist here (ISA certified, portland OR).") == ["The user is an arborist (ISA certified, portland OR)."]
    assert contents("single mom here so i'm doing all of this alone") == [
        "The user is a single mom.", "The user is doing all of this alone."]
    assert contents("same here") == [] and contents("everyone here is nice") == []
    assert contents("Sarah here, I need help with my resume") == []  # a name, no role
    assert contents("first time here, long time lurker") == [] and contents("newbie here") == []
    # "and tonight is …" opens a clause of its own: the job before it is kept whole
    assert contents("im a nurse and tonight is my last night shift") == ["The user is a nurse."]
    assert contents("my eyes aren't great lately (I had surgery on the left eye in May and the right is next)") == [
        "The user's eyes aren't great lately (the user had surgery on the left eye in May and the right is next)."]


def test_what_someone_else_does_to_the_user_is_not_the_users_fact():
    assert contents("我家柯基叫馒头 最近老咬我拖鞋") == ["用户家柯基叫馒头"]
    assert contents("开完会同事喊我去喝酒") == [] and contents("能给我讲讲轨距") == []
    assert contents("同事喊我去喝酒") == [] and contents("他们叫我别去") == []  # an errand, not a nickname
    assert contents("老板想让我学五轴 说给我涨一千五 值得学吗") == ["用户的老板想让用户学五轴"]  # what he said
    # a question asked without a question mark is no fact, nor the part of a clause that asks
    assert "用户咋回" not in contents("天天有客人投诉 我咋回")
    assert contents("就我一个人 管一千多口人 问下狂犬疫苗要是断货了 被狗咬的村民怎么办") == ["就用户一个人，管一千多口人"]
    assert contents("我不咋喝酒") == ["用户不咋喝酒"]
    # the user's own facts with the user as object stay: a prescription, a name, a person named
    assert contents("医生给我开了布洛芬") == ["用户的医生给用户开了布洛芬"]
    assert contents("大家都叫我静静") == ["大家叫用户静静"]
    assert contents("周末跟我老婆一起去爬山") != []
    # what goes on from the user's own question tells no fact
    assert contents("为什么坐飞机降落的时候耳朵会疼 越往下越疼") == []


def test_a_friends_child_is_theirs_and_a_bare_kin_word_with_a_name_is_the_users():
    assert contents("我大学同学她老公升职了 派去新加坡三年 她在银行做得挺好 孩子才两岁") == []
    assert contents("Cold. Wife Barb keeps the thermostat low.") == ["The user's wife Barb keeps the thermostat low."]
    # "Wife and I": the user's wife, not a person named Wife; "Neighbor Tom" names the neighbour
    assert contents("Wife and I are moving to Denver in June") == [
        "The user's wife and the user are moving to Denver in June."]
    assert contents("Jake and I broke up") == ["The user and Jake broke up."]
    # someone named by whose they are, "and I": one subject of two, not "The user doesn't get along."
    assert contents("my wife's sister and I don't get along") == []
    assert contents("my partner Tomasz is Polish and I'm trying to learn a bit")[0] == "The user's partner Tomasz is Polish."
    assert "The user's neighbor is named Tom." in contents("Neighbor Tom keeps parking in my spot")


def test_a_message_that_opens_with_what_the_user_does_says_who_is_writing():
    assert contents("motorcycle mechanic in austin, mostly vintage hondas. customer brought a CB750") == [
        "The user is a motorcycle mechanic in austin, mostly vintage hondas."]
    assert contents("PTA (physical therapist assistant) in Toledo. my patient only speaks spanish")[0] == (
        "The user is a PTA (physical therapist assistant) in Toledo.")
    assert contents("dental hygienist in Tucson and my wrist is killing me")[0] == "The user is a dental hygienist in Tucson."
    assert contents("ER nurse, 12 years") == ["The user is an ER nurse, 12 years."]
    # a thing, a request for someone who does the job, a role inside a clause: no introduction
    assert contents("water heater in the basement, its leaking") == []
    assert contents("Wedding photographer in Austin, any recs?") == []
    assert contents("Gift for a teacher, ideas?") == [] and contents("Tutor for my son, how much should I pay?") == []
    assert contents("aye so I caddie at St Andrews") == ["The user caddies at St Andrews."]
    assert contents("it's fine. nurse at heart I guess") == []


def test_what_happened_to_the_user_s_health_is_kept_though_told_as_a_story():
    assert contents("I had a stroke in 2024") == ["The user had a stroke in 2024."]
    assert contents("yeah I got heat exhaustion last tuesday") == ["The user got heat exhaustion last tuesday."]
    assert contents("had a stroke in 2024 and my right hand's still weak") == [
        "The user had a stroke in 2024.", "The user's right hand's still weak."]
    assert contents("I had a great time at the party") == [] and contents("I got a flat tire this morning") == []
    # a habit said without its "I"; "gotta" read as said
    assert contents("walk 11 dogs a day in brooklyn") == ["The user walks 11 dogs a day in brooklyn."]
    assert contents("I gotta finish by 5 every day") == ["The user has to finish by 5 every day."]


def test_a_fragment_carried_into_its_clause_ends_where_the_next_clause_starts():
    assert contents("I'm 74, retired carpenter, I drive for Meals on Wheels twice a week in Spokane.") == [
        "The user is 74.", "The user is retired carpenter.",
        "The user drives for Meals on Wheels twice a week in Spokane."]


def test_a_memory_keeps_no_emoji():
    assert contents("my director wants me to do saturdays now 😩") == [
        "The user's director wants the user to do saturdays now."]
    assert contents("我喜欢猫🐱") == ["用户喜欢猫"]


def test_a_memory_keeps_only_brackets_that_pair():
    assert contents("my son (he's 8) dislikes fish) lol") == ["The user's son (he is 8) dislikes fish."]
    assert contents("I live in Leeds (") == ["The user lives in Leeds."]
    assert contents("我住在杭州（西湖区") == ["用户住在杭州西湖区"]
    assert contents("I love tea (( and coffee") == ["The user likes tea and coffee."]
    assert contents("I'm allergic to peanuts :( sad") == ["The user is allergic to peanuts sad."]
    assert contents("I love jazz (really) and blues") == ["The user likes jazz (really) and blues."]


def test_a_memory_said_twice_is_kept_once_and_a_longer_one_beside_it_too():
    assert contents("I like tea. I like tea.") == ["The user likes tea."]
    assert len(contents("I have a dog and I have a dog allergy")) == 2


def test_holdout16_round_forms_of_speech():
    # a sentence adverb, a job said as "been a …" or "… in <place> here", an emoji between sentences
    assert contents("I'm a sleep tech. Ironically I have insomnia.") == ["The user is a sleep tech.", "The user has insomnia."]
    assert contents("been a longshoreman at the port of oakland 11 yrs") == [
        "The user has been a longshoreman at the port of oakland 11 yrs."]
    assert contents("been a while since I cooked") == []
    assert contents("session guitarist in Nashville here. just quit touring") == [
        "The user is a session guitarist in Nashville.", "The user just quit touring."]
    assert contents("on break rn 🥱 i stock shelves overnight at a kroger") == [
        "The user stocks shelves overnight at a kroger."]
    assert contents("i love 🍕 my wife is a chef") == ["The user's wife is a chef."]
    assert contents("my mom 😭 she has cancer") == ["The user's mom has cancer."]
    # a job said bare after someone else was named is theirs: only the message's opening words say who writes
    assert contents("My daughter texted. Nurse at Mercy Hospital, night shift") == []
    assert contents("my husband? been a longshoreman at the port 11 yrs") == []
    assert contents("yo whats a good warmup for drummin, my wrists get sore after like an hour") == [
        "The user's wrists get sore after like an hour."]
    # "by then" keeps its "then"; an engagement "we got" is one the user has; a bare mood of the day is none
    assert contents("we got a wedding gig in Laredo june 6 so I want something by then") == [
        "The user and others have a wedding gig in Laredo june 6.", "The user wants something by then."]
    assert contents("we got a new car") == ["The user got a new car."] and contents("we got a car wash yesterday") == []
    assert contents("I'm just fried.") == [] and contents("I'm done with that life.") == []
    assert contents("I'm done with chemo") == ["The user is done with chemo."]


def test_holdout16_round_chinese_forms():
    # the north's 俺 is 我; 自己 said again is no new clause; a time alone answers what was asked, or nothing
    assert contents("俺在沈阳一个剧场唱二人转") == ["用户在沈阳一个剧场唱二人转"]
    assert contents("我想自己也开个抖音") == ["用户想自己也开个抖音"]
    assert contents("A:你哪天的航班？", "后天") == ["用户后天（1月12日）的航班"]
    assert contents("A:下一次考试是什么时候？", "后天") == [] and contents("后天") == []


def test_a_day_corrected_in_words_mends_the_day_not_an_ordinal():
    said = contents("my committee meeting got moved to june 30 and I'm a 4th year PhD at UC Santa Cruz",
                    "wait sorry it's july 1 not june 30")
    assert "The user's committee meeting got moved to july 1." in said
    assert "The user is a 4th year PhD at UC Santa Cruz." in said


def test_holdout17_round_forms():
    # "I-40" is a road; a job noun more; a race's date after a comma; taking over is a lasting change;
    # a gerund's event with its day is the user's; "贴砖的 …" opens with the writer's trade
    assert contents("night auditor at a motel off I-40 in Flagstaff") == [
        "The user is a night auditor at a motel off I-40 in Flagstaff."]
    assert contents("game warden in Kalispell. opening weekend is soon") == [
        "The user is a game warden in Kalispell.", "The user's opening weekend is soon."]
    assert contents("I'm training for a marathon, dec 6.") == ["The user is training for a marathon, dec 6."]
    assert contents("I took over the Tuesday sale at the sale barn in 2022") == [
        "The user took over the Tuesday sale at the sale barn in 2022."]
    assert contents("shearing day is saturday") == ["The user's shearing day is saturday."]
    assert contents("Swimming is fun") == []
    assert contents("贴砖的 手上全是口子") == ["用户是贴砖的，手上全是口子"]
    assert contents("好的 我知道了") == [] and contents("做饭的时候老是烫手") == ["用户做饭的时候老是烫手"]
