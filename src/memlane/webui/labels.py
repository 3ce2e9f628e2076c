"""Words for the engine's values a person sees: categories, sources, statuses, history
actions, record fields, actors, import operations, job states, context blocks and what a
purge removed. The engine keeps its identifiers (`"ADD"`, `"extraction_jobs"`); the pages show
these labels. A value missing from a table shows as itself, escaped like any text; a purge's
unknown table shows as "other records", never its name."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from markupsafe import Markup

from memlane.models import MemoryRecord
from memlane.webui.i18n import text

LABELS: dict[str, dict[str, dict[str, str]]] = {
    "en": {
        "category": {
            "fact": "fact", "preference": "preference", "rule": "rule", "experience": "experience",
            "workflow": "workflow", "decision": "decision", "skill": "skill", "todo": "to-do", "project": "project",
            "episode": "episode", "core": "core", "skill_usage": "skill usage", "error": "error", "system": "system",
            "knowledge": "knowledge",
        },
        "source": {
            "user": "added directly", "extractor": "extracted by the LLM", "heuristic": "extracted by rules",
            "system": "system", "import": "imported", "agent": "written by the agent",
        },
        "status": {"active": "active", "archived": "archived", "deleted": "deleted", "superseded": "superseded"},
        "event": {
            "ADD": "Added", "UPDATE": "Updated", "BOOST": "Reinforced", "DELETE": "Deleted", "DECAY": "Decayed",
            "ARCHIVE": "Archived", "PROMOTE": "Promoted", "RESTORE": "Restored", "DEMOTE": "Demoted",
            "PURGE": "Forgotten", "SUPERSEDE": "Fact changed",
        },
        "op": {"ADD": "add", "UPDATE": "change", "SUPERSEDE": "the fact changed", "DELETE": "delete", "SKIP": "skip"},
        "field": {
            "id": "id", "content": "content", "category": "category", "kind": "kind", "score": "score",
            "confidence": "confidence", "subject": "subject", "predicate": "predicate", "created_at": "created",
            "updated_at": "updated", "last_activated": "last used", "activation_count": "times used",
            "expires_at": "expires", "source": "source", "verified": "verified", "source_session": "session",
            "status": "status", "pinned": "pinned", "metadata": "details", "user_id": "user id",
            "agent_id": "agent id", "session_id": "session id", "text": "text", "digest": "preview",
            "confirm": "confirmation", "ids": "selection", "action": "action", "q": "search", "page": "page",
            "min_score": "score from", "max_score": "score to", "since": "created from", "until": "created until",
            "sort": "sort", "order": "order", "verified_filter": "verified", "name": "file name", "key": "API key",
            "memory_id": "memory", "query": "search", "valid_from": "true since", "valid_to": "true until",
            "superseded_at": "replaced", "superseded_by": "replaced by", "supersedes": "replaces", "by": "replaced by",
        },
        "actor": {
            "api": "API", "web": "web UI", "cli": "command line", "agent": "agent", "admin": "admin",
            "import": "MEMORY.md import", "episode": "episode summary", "commands": "the user's own words",
            "llm": "LLM", "feedback": "feedback", "consolidate": "consolidation", "end_session": "session end",
            "extract:extractor": "extraction by the LLM", "extract:heuristic": "extraction by rules",
            "extract:user": "the user's own words",
        },
        "reason": {
            "edited in the web UI": "edited in the web UI", "deleted in the web UI": "deleted in the web UI",
            "bulk delete in the web UI": "deleted with others in the web UI",
            "bulk archive in the web UI": "archived with others in the web UI",
            "bulk activate in the web UI": "made active with others in the web UI",
            "attachment expired": "attachment expired", "used in the conversation": "used in the conversation",
            "confirmed by a person": "confirmed by a person", "confirmation withdrawn": "confirmation withdrawn",
            "verified in the web UI": "verified in the web UI", "unverified in the web UI": "confirmation withdrawn in the web UI",
            "changed in the web UI": "the fact changed (web UI)",
        },
        "role": {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"},
        "kind": {"semantic": "semantic", "episodic": "episodic", "procedural": "procedural"},
        "job": {"queued": "waiting", "running": "running", "done": "done", "failed": "failed",
                "retrying": "waiting to retry"},
        "block": {"tools": "tools", "scratchpad": "scratchpad", "core": "core memories", "memories": "memories",
                  "summary": "summary so far", "history": "recent messages"},
        "removed": {"memories": "memories", "turns": "messages", "sessions": "conversations",
                    "episodes": "episode summaries", "memory_events": "history entries",
                    "extraction_jobs": "extraction jobs", "scratchpad": "working notes", "attachments": "attachments",
                    "events": "event log entries", "api_keys": "API keys", "index": "search index entries",
                    "files": "files", "cached_vectors": "cached vectors", "other": "other records"},
    },
    "zh": {
        "category": {
            "fact": "事实", "preference": "偏好", "rule": "规则", "experience": "经历", "workflow": "工作流程",
            "decision": "决定", "skill": "技能", "todo": "待办", "project": "项目", "episode": "情节", "core": "核心",
            "skill_usage": "技能使用", "error": "错误", "system": "系统", "knowledge": "知识",
        },
        "source": {"user": "直接添加", "extractor": "LLM 提取", "heuristic": "规则提取", "system": "系统", "import": "导入",
                   "agent": "智能体写入"},
        "status": {"active": "活跃", "archived": "已归档", "deleted": "已删除", "superseded": "已被取代"},
        "event": {
            "ADD": "添加", "UPDATE": "修改", "BOOST": "强化", "DELETE": "删除", "DECAY": "衰减", "ARCHIVE": "归档",
            "PROMOTE": "升级", "RESTORE": "恢复", "DEMOTE": "降级", "PURGE": "全部忘记", "SUPERSEDE": "事实变更",
        },
        "op": {"ADD": "新增", "UPDATE": "修改", "SUPERSEDE": "事实变更", "DELETE": "删除", "SKIP": "跳过"},
        "field": {
            "id": "id", "content": "内容", "category": "类别", "kind": "种类", "score": "分数", "confidence": "置信度",
            "subject": "主语", "predicate": "谓语", "created_at": "创建时间", "updated_at": "更新时间",
            "last_activated": "最近使用", "activation_count": "使用次数", "expires_at": "过期时间", "source": "来源",
            "verified": "已确认", "source_session": "会话", "status": "状态", "pinned": "已置顶", "metadata": "附加信息",
            "user_id": "用户 id", "agent_id": "智能体 id", "session_id": "会话 id", "text": "文本", "digest": "预览",
            "confirm": "确认", "ids": "选择", "action": "操作", "q": "搜索", "page": "页码", "min_score": "分数从",
            "max_score": "分数到", "since": "创建起始日", "until": "创建截止日", "sort": "排序", "order": "顺序",
            "verified_filter": "已确认", "name": "文件名", "key": "API 密钥", "memory_id": "记忆", "query": "搜索",
            "valid_from": "成立起始", "valid_to": "成立截止", "superseded_at": "被取代时间", "superseded_by": "被取代为",
            "supersedes": "取代了", "by": "被取代为",
        },
        "actor": {
            "api": "API", "web": "网页界面", "cli": "命令行", "agent": "智能体", "admin": "管理员",
            "import": "MEMORY.md 导入", "episode": "情节摘要", "commands": "用户的原话", "llm": "LLM", "feedback": "反馈",
            "consolidate": "整理", "end_session": "会话结束", "extract:extractor": "LLM 提取",
            "extract:heuristic": "规则提取", "extract:user": "用户的原话",
        },
        "reason": {
            "edited in the web UI": "在网页界面中编辑", "deleted in the web UI": "在网页界面中删除",
            "bulk delete in the web UI": "在网页界面中批量删除", "bulk archive in the web UI": "在网页界面中批量归档",
            "bulk activate in the web UI": "在网页界面中批量设为活跃", "attachment expired": "附件已过期",
            "used in the conversation": "在对话中用到", "confirmed by a person": "由本人确认",
            "confirmation withdrawn": "撤销确认", "verified in the web UI": "在网页界面中确认",
            "unverified in the web UI": "在网页界面中撤销确认", "changed in the web UI": "事实变更（网页界面）",
        },
        "role": {"user": "用户", "assistant": "助手", "system": "系统", "tool": "工具"},
        "kind": {"semantic": "语义", "episodic": "情节", "procedural": "程序性"},
        "job": {"queued": "排队中", "running": "运行中", "done": "已完成", "failed": "失败", "retrying": "等待重试"},
        "block": {"tools": "工具", "scratchpad": "工作笔记", "core": "核心记忆", "memories": "记忆", "summary": "前情摘要",
                  "history": "最近的消息"},
        "removed": {"memories": "记忆", "turns": "对话消息", "sessions": "对话", "episodes": "情节摘要",
                    "memory_events": "历史记录", "extraction_jobs": "提取任务", "scratchpad": "工作笔记",
                    "attachments": "附件", "events": "事件记录", "api_keys": "API 密钥", "index": "搜索索引条目",
                    "files": "文件", "cached_vectors": "缓存的向量", "other": "其他记录"},
    },
}

# the search index's own tables (SQLite's and Postgres'): a person sees them as one line
INDEX_TABLES = frozenset({"vector_scopes", "vector_log", "text_corpora", "text_log", "row_corpora", "row_log",
                          "fts_stats"})
REMOVED_ORDER = ("memories", "sessions", "turns", "episodes", "memory_events", "extraction_jobs", "scratchpad",
                 "attachments", "events", "api_keys", "index", "other", "files", "cached_vectors")


def label(lang: str, group: str, value: object) -> str:
    """The word for `value` of `group` ("category", "event", …) in `lang`; the value itself
    when no table knows it."""
    raw = "" if value is None else str(value)
    table = LABELS.get(lang, LABELS["en"]).get(group, {})
    if raw in table:
        return table[raw]
    if group == "actor" and raw.startswith("extract:"):
        return table.get("extract:extractor", raw)
    return raw


def labeler(lang: str) -> Callable[[str, object], str]:
    def lab(group: str, value: object) -> str:
        return label(lang, group, value)
    return lab


def removed(lang: str, counts: Mapping[str, int], files: int, cached_vectors: int = 0) -> list[tuple[str, int]]:
    """A purge's report as (label, count) lines: the search index's tables summed into one,
    a table no label names into "other records"."""
    known = set(LABELS["en"]["removed"])
    totals: dict[str, int] = {}
    for table, n in counts.items():
        key = "index" if table in INDEX_TABLES else table if table in known else "other"
        totals[key] = totals.get(key, 0) + n
    totals["files"] = files
    if cached_vectors:
        totals["cached_vectors"] = cached_vectors
    return [(label(lang, "removed", k), totals[k]) for k in REMOVED_ORDER if k in totals]


def shown(lang: str, field: str, value: Any) -> str | Markup:
    """A history field's value for a person: yes / no for flags, labels for the engine's
    words, dates as dates, scores to three places; text stays as written (isolated)."""
    if value is None or value == "":
        return ""
    if isinstance(value, bool):
        return text(lang, "yes" if value else "no")
    if field in ("category", "source", "status", "kind"):
        return label(lang, field, value)
    if isinstance(value, float):
        return f"{value:.3f}"
    if field.endswith("_at") or field in ("last_activated", "valid_from", "valid_to"):
        try:
            return datetime.fromisoformat(str(value)).strftime("%Y-%m-%d %H:%M")
        except ValueError:
            pass
    if isinstance(value, dict | list):
        return isolate(json.dumps(value, ensure_ascii=False, sort_keys=True))
    return isolate(str(value))


def held(lang: str, m: MemoryRecord) -> str:
    """When a memory's fact held, in words: "since 2024-03-15", "2019-06-01 – 2024-03-15"."""
    start = (m.valid_from or m.created_at).strftime("%Y-%m-%d")
    if m.valid_to is None:
        return text(lang, "held_since", start=start)
    return text(lang, "held_span", start=start, end=m.valid_to.strftime("%Y-%m-%d"))


def isolate(value: object) -> Markup:
    """User text in its own bidi isolate: a right-to-left override inside it cannot reorder
    the page's words around it."""
    return Markup("<bdi>{}</bdi>").format("" if value is None else value)


def isolate_plain(value: object) -> str:
    """The same for places that take no markup (a title, an attribute): FSI … PDI."""
    return "\u2068" + ("" if value is None else str(value)) + "\u2069"


def code(value: object) -> Markup:
    """A command or file name inside a sentence, as code (never backticks on the page)."""
    return Markup("<code>{}</code>").format(value)
