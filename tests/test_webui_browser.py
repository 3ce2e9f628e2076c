"""The web UI in headless Chromium (Debian's package, driven by Python playwright; never
`playwright install`): a person signs in, loads the demo, searches, edits and sees the edit
in the history, deletes and undoes, imports an edited MEMORY.md after its dry run, purges;
another user's key sees none of it. Screenshots at desktop and phone width, zh and en."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memlane import Memory
from tests.webui_support import ui_site

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e '.[dev]')")
CHROMIUM = os.environ.get("MEMLANE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM}: `make test` installs Debian's chromium with apt-get",
                allow_module_level=True)
# the flags machines here need: no network but 127.0.0.1, no sandbox as root, no GPU
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS_DIR = os.environ.get("MEMLANE_SCREENSHOTS")  # set to docs/images to refresh the README's
README_SHOTS = {"memories-desktop-en", "memories-phone-zh", "insight-desktop-zh", "memory-phone-en"}
TIMEOUT_MS = 15_000  # every wait is bounded
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # playwright gives every launch a fresh, empty profile directory of its own
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, timeout=TIMEOUT_MS)
        yield b
        b.close()


@pytest.fixture
def site(make_memory: Callable[..., Memory]) -> Iterator[dict[str, Any]]:
    """`memlane serve`'s app (its keys, its auth) with the UI in it; bob has one memory."""
    mem = make_memory()
    mem.add("Bob keeps bees on the roof", user_id="bob", category="fact")
    with ui_site(mem, "server") as s:
        yield {"mem": mem, "base": s.base, "key": s.key}


def open_page(browser: Any, base: str, key: str, *, lang: str = "en", viewport: dict[str, int] = DESKTOP) -> Any:
    context = browser.new_context(viewport=viewport, locale="zh-CN" if lang == "zh" else "en-US",
                                  extra_http_headers={"Accept-Language": "zh-CN,zh;q=0.9" if lang == "zh" else "en"})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.errors = errors
    page.goto(base + "/memories")
    page.get_by_label("API key" if lang == "en" else "API 密钥").fill(key)
    page.keyboard.press("Enter")
    page.wait_for_url("**/memories")
    return page


def load_demo(page: Any) -> None:
    page.get_by_role("button", name="Load demo data").click()
    page.wait_for_url("**/memories?status=any")


def row_of(page: Any, text: str) -> Any:
    return page.locator("table.memories tbody tr", has_text=text)


def test_search_edit_history_delete_undo(browser: Any, site: dict[str, Any]) -> None:
    mem = site["mem"]
    page = open_page(browser, site["base"], site["key"]["lin"])
    load_demo(page)
    assert mem.stats(user_id="lin").memories > 5
    # search (htmx, as typed): the same hybrid search as the API
    page.get_by_label("Search", exact=True).fill("花生过敏")
    page.wait_for_url("**q=*")
    target = next(m for m in mem.list(user_id="lin") if m.content == "用户对花生过敏")
    rows = page.locator("table.memories tbody tr")
    assert rows.first.locator("td.content").inner_text().startswith(target.content)
    assert row_of(page, "Singapore").count() == 0  # an unrelated memory is not a hit
    # inline edit
    row = row_of(page, target.content)
    row.get_by_role("button", name="Edit").click()
    box = page.get_by_label("Content", exact=True)
    box.fill("用户对花生和腰果过敏")
    box.fill("x" * 100_000)  # over store.max_content_chars: the engine's error, shown in the alert
    page.get_by_role("button", name="Save").click()
    page.get_by_role("alert").get_by_text("content").wait_for()
    page.errors.clear()  # the browser logs the expected 422
    box.fill("用户对花生和腰果过敏")
    page.get_by_role("button", name="Save").click()
    row_of(page, "用户对花生和腰果过敏").get_by_text("Saved.").wait_for()
    assert page.get_by_role("alert").inner_text() == ""  # the next success clears it
    assert mem.get(target.id, user_id="lin").content == "用户对花生和腰果过敏"
    # the edit in its history, before → after, by the web UI
    page.goto(f"{site['base']}/memories/{target.id}")
    update = page.locator("li.event", has_text="Updated").first
    assert target.content in update.locator("td.b").first.inner_text()
    assert "用户对花生和腰果过敏" in update.locator("td.a").first.inner_text()
    assert "web UI" in update.inner_text()
    # delete with confirmation, then undo — by keyboard alone: each step focuses the next button
    page.goto(site["base"] + "/memories")
    row_of(page, "用户对花生和腰果过敏").get_by_role("button", name="Delete").focus()
    page.keyboard.press("Enter")
    sync_api.expect(page.get_by_role("button", name="Yes, delete")).to_be_focused()
    page.keyboard.press("Enter")
    page.get_by_text("Deleted.").wait_for()
    assert target.id not in [m.id for m in mem.list(user_id="lin")]
    sync_api.expect(page.get_by_role("button", name="Undo")).to_be_focused()
    page.keyboard.press("Enter")
    row_of(page, "用户对花生和腰果过敏").get_by_text("Undone.").wait_for()
    assert mem.get(target.id, user_id="lin").content == "用户对花生和腰果过敏"
    assert page.errors == []


def test_import_edited_memory_md_after_the_dry_run(browser: Any, site: dict[str, Any]) -> None:
    mem = site["mem"]
    first = mem.add("林晓住在上海", user_id="lin", category="fact")
    page = open_page(browser, site["base"], site["key"]["lin"])
    page.goto(site["base"] + "/files")
    assert "林晓住在上海" in page.get_by_test_id("memory-md").inner_text()
    area = page.locator("#import-text")
    area.fill(area.input_value().replace("林晓住在上海", "林晓住在杭州"))
    page.get_by_role("button", name="Show the changes").click()
    op = page.locator("table.ops tr.op-update")
    assert "林晓住在上海" in op.locator("td.b").inner_text() and "林晓住在杭州" in op.locator("td.a").inner_text()
    assert mem.get(first.id, user_id="lin").content == "林晓住在上海"  # nothing written by the preview
    page.get_by_role("button", name="Apply these changes").click()
    page.wait_for_url("**/files?notice=*")
    assert mem.get(first.id, user_id="lin").content == "林晓住在杭州"
    assert "林晓住在杭州" in page.get_by_test_id("memory-md").inner_text()


def test_purge_with_typed_confirmation(browser: Any, site: dict[str, Any]) -> None:
    mem = site["mem"]
    mem.add("林晓喜欢白茶", user_id="lin", category="preference")
    page = open_page(browser, site["base"], site["key"]["lin"])
    page.goto(site["base"] + "/forget")
    page.get_by_label("Type lin to confirm").fill("lim")  # a typo: the form again, saying so
    page.get_by_role("button", name="Forget everything").click()
    page.get_by_text("Nothing was forgotten").wait_for()
    sync_api.expect(page.get_by_label("Type lin to confirm")).to_be_focused()
    assert page.get_by_role("navigation").get_by_role("link", name="Memories").is_visible()
    assert mem.stats(user_id="lin").memories == 1
    page.errors.clear()  # the browser logs the 422
    page.get_by_label("Type lin to confirm").fill("lin")
    page.get_by_role("button", name="Forget everything").click()
    page.get_by_text("Forgotten.").wait_for()
    assert mem.stats(user_id="lin").memories == 0
    assert mem.stats(user_id="bob").memories == 1


def test_a_second_users_key_sees_nothing_of_the_first(browser: Any, site: dict[str, Any]) -> None:
    mem = site["mem"]
    lin_page = open_page(browser, site["base"], site["key"]["lin"])
    load_demo(lin_page)
    lin_texts = [m.content for m in mem.list(user_id="lin")]
    some = mem.list(user_id="lin")[0]
    bob = open_page(browser, site["base"], site["key"]["bob"])
    for path in ["/memories?status=any", "/memories?q=花生", "/conversations", "/conversations?q=花生",
                 "/files", "/insight?q=花生", "/forget", f"/memories/{some.id}", "/conversations/demo-1"]:
        bob.goto(site["base"] + path)
        text = bob.locator("body").inner_text()
        assert not any(t in text for t in lin_texts), path
    assert "Bob keeps bees" in bob.goto(site["base"] + "/memories").text()
    # a fragment fetched by hand from bob's page: 404, no content
    fragment = bob.context.request.get(f"{site['base']}/memories/{some.id}/row", headers={"HX-Request": "true"})
    assert fragment.status == 404 and some.content not in fragment.text()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_screenshots_and_layout(browser: Any, site: dict[str, Any], tmp_path: Path, lang: str, width: str) -> None:
    """Each page fits the width (no sideways scrolling on a phone), speaks the language, and
    is reachable by keyboard (the skip link first); screenshots go to tmp_path."""
    page = open_page(browser, site["base"], site["key"]["lin"], lang=lang, viewport=PHONE if width == "phone" else DESKTOP)
    page.get_by_role("button", name="Load demo data" if lang == "en" else "载入演示数据").click()
    page.wait_for_url("**/memories?status=any")
    some = next(m for m in site["mem"].list(user_id="lin") if m.source_session)
    for name, path in [("memories", "/memories"), ("insight", "/insight?q=晚饭吃什么"), ("files", "/files"),
                       ("conversation", "/conversations/demo-1"), ("memory", f"/memories/{some.id}")]:
        page.goto(site["base"] + path)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (name, overflow)
        assert page.locator("html").get_attribute("lang") == ("zh-CN" if lang == "zh" else "en")
        shot = tmp_path / f"{name}-{width}-{lang}.png"
        page.screenshot(path=str(shot), full_page=width == "desktop")
        assert shot.stat().st_size > 10_000
        if SHOTS_DIR and shot.stem in README_SHOTS:
            Path(SHOTS_DIR).mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, Path(SHOTS_DIR) / shot.name)
    nav = page.get_by_role("navigation")
    assert ("Memories" if lang == "en" else "记忆") in nav.inner_text()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    assert page.errors == []


def test_a_bidi_override_in_a_memory_stays_inside_it(browser: Any, site: dict[str, Any], tmp_path: Path) -> None:
    """U+202E in a memory reverses the memory's own text, never the page's words after it: the
    tag after the content still sits to its right, in Chinese and English."""
    mem = site["mem"]
    m = mem.add("abc\u202edef ghi", user_id="lin", category="fact", pinned=True)
    for lang in ("en", "zh"):
        page = open_page(browser, site["base"], site["key"]["lin"], lang=lang)
        cell = page.locator(f"#m-{m.id} td.content")
        text, tag = cell.locator("a").bounding_box(), cell.locator("span.tag").first.bounding_box()
        assert tag["x"] >= text["x"] + text["width"] - 1, (lang, text, tag)
        page.goto(f"{site['base']}/memories/{m.id}")
        big = page.get_by_test_id("memory-content").bounding_box()
        facts = page.locator("dl.facts").bounding_box()
        assert facts["y"] >= big["y"] + big["height"] - 1  # the page below the memory, in order
        page.screenshot(path=str(tmp_path / f"bidi-{lang}.png"))
        assert page.errors == []
