"""The UI's words in English and Chinese: the browser's Accept-Language picks, a cookie set
by the language switch overrides. A key missing from one language is a test failure
(tests/test_webui_http.py), never an English word in a Chinese page."""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup, escape
from starlette.requests import Request

COOKIE = "memlane_lang"
LANGUAGES = ("en", "zh")

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "app": "memlane", "skip": "Skip to content", "nav": "Sections",
        "memories": "Memories", "conversations": "Conversations", "files": "Files", "insight": "Insight",
        "forget_me": "Forget me", "logout": "Log out", "signed_in_as": "Signed in as", "admin": "admin",
        "switch_user": "Switch user", "language": "Language",
        "login": "Log in", "api_key": "API key", "login_help": "Paste an API key ({cmd} prints one). You see only that key's memories.",
        "pick_user": "Pick a user", "pick_user_help": "An admin key may look at any user's memories.",
        "user_id": "User id", "agent_id": "Agent id (optional)", "open": "Open",
        "search": "Search", "search_placeholder": "Search memories (words or meaning)",
        "filters": "Filters", "category": "Category", "status": "Status", "any": "any", "active": "active",
        "archived": "archived", "deleted": "deleted", "source": "Source", "verified": "Verified",
        "pinned": "Pinned", "yes": "yes", "no": "no", "min_score": "Score from", "max_score": "Score to",
        "since": "Created from", "until": "Created until", "sort": "Sort", "order": "Order",
        "relevance": "relevance", "score": "Score", "updated_at": "updated", "created_at": "created",
        "last_activated": "last used", "activation_count": "times used", "content": "Content",
        "desc": "descending", "asc": "ascending", "apply": "Apply", "reset": "Reset",
        "n_memories": "{n} memories", "page_of": "Page {page} of {pages}", "prev": "Previous", "next": "Next",
        "select": "Select", "select_all": "Select all on this page", "selected_action": "With the selected:",
        "delete": "Delete", "archive": "Archive", "activate": "Make active", "restore": "Restore",
        "edit": "Edit", "save": "Save", "cancel": "Cancel", "pin": "Pin", "unpin": "Unpin",
        "verify": "Mark verified", "unverify": "Unmark verified", "undo": "Undo", "undo_last": "Undo the last change",
        "actions": "Actions", "confirm_delete": "Delete this memory? It leaves search, files and caches; Undo brings it back.",
        "yes_delete": "Yes, delete", "deleted_notice": "Deleted.", "saved": "Saved.", "undone": "Undone.",
        "empty": "No memories here yet.", "load_demo": "Load demo data",
        "load_demo_help": "Imports memlane's bundled demo conversation (Chinese and English) into this user and extracts memories from it.",
        "no_match": "No memory matches.",
        "fc_protected": "never fades (pinned, verified or core)", "fc_history": "kept as history: never fades", "fc_archived": "archived",
        "fc_none": "stays above the thresholds for 10 years", "fc_due_now": "{action} at the next consolidation",
        "fc_due": "{action} around {when}", "fc_rule": "×{factor}/day after {grace} days unused",
        "fc_now": "now {score}", "expires": "expires {when}",
        "ARCHIVE": "archived", "DELETE": "deleted", "DEMOTE": "demoted",
        "memory": "Memory", "history": "History", "kind": "Change", "actor": "By", "reason": "Why", "when": "When",
        "field": "Field", "before": "Before", "after": "After", "came_from": "Where it came from",
        "session": "Session", "turns": "Turns", "no_source": "Added directly, not extracted from a conversation.",
        "agent_unconfirmed": "the agent's own choice, not confirmed by a person: it fades unless marked verified",
        "related": "Related memories", "related_help": "Nearest by vector similarity.", "similarity": "similarity",
        "replaced": "What it replaced", "contradicted": "Memories it contradicted",
        "gone": "This memory is deleted. Its history remains; Undo restores it.",
        "times_used": "used {n}×", "created": "Created", "updated": "Updated",
        "sessions": "Sessions", "started": "Started", "ended": "Ended", "messages": "Messages", "open_session": "open",
        "search_turns": "Search in conversations", "turns_found": "{n} turns found", "episode": "Episode summary",
        "goal": "Goal", "outcome": "Outcome", "no_episode": "No episode summary (the session is open or short).",
        "extracted": "Memories extracted from this session", "delete_session": "Delete this conversation",
        "delete_session_help": "Forgets the session, its turns, episode and jobs everywhere they are kept. Type the session id to confirm.",
        "confirm": "Confirm", "no_sessions": "No conversations yet.", "role": "Role",
        "memory_md": "MEMORY.md", "user_md": "USER.md", "download": "Download",
        "import_edits": "Import my edits", "import_help": "Paste (or choose) your edited MEMORY.md. You will see what would change before anything is written.",
        "choose_file": "Choose a file", "preview": "Show the changes", "preview_title": "Changes in your file",
        "apply_changes": "Apply these changes", "no_changes": "The file says nothing new: nothing to apply.",
        "op": "Operation", "new": "new", "shared": "shared by the user (read-only for this agent)", "line": "Line", "imported": "Imported", "rendered": "Rendered", "source_text": "Text",
        "chart_scores": "Score distribution", "chart_categories": "Memories by category",
        "chart_timeline": "Active, archived and deleted over time", "chart_context": "Tokens per block of the context, against each block's budget",
        "context_title": "What the agent is given", "system_prompt": "System prompt",
        "archive_below": "archive below", "jobs": "Extraction jobs", "job_status": "Status", "attempts": "Attempts",
        "next_at": "Next try", "last_error": "Last error", "no_jobs": "No extraction job is queued, running or failed.",
        "jobs_pending": "{n} waiting in the queue.",
        "context_query": "What would the agent get for", "context_tokens": "{tokens} tokens in all", "block": "Block",
        "tokens": "Tokens", "budget": "Budget", "window": "window", "numbers": "Numbers",
        "stats_line": "{memories} memories · {sessions} sessions · {turns} turns · {episodes} episodes · {events} audit events",
        "forget_title": "Forget me", "forget_help": "Deletes everything memlane keeps for this user: memories, conversations, episodes, files, caches and vectors. It cannot be undone. Type the user id to confirm.",
        "forget_type": "Type {user} to confirm", "forget_button": "Forget everything",
        "forget_done": "Forgotten.", "removed": "Removed",
        "notice_delete": "Deleted {n}.", "notice_archive": "Archived {n}.", "notice_activate": "Made {n} active.",
        "notice_restore": "Restored {n}.", "notice_deleted": "Conversation deleted ({n} turns).",
        "notice_import": "Applied: {ops}", "list_sep": ", ", "error": "Error",
        "err_csrf": "This form expired or came from elsewhere. Reload the page and try again.",
        "err_cross_site": "Refused: the request came from another site.",
        "err_signed_out": "You are signed out. Reload the page to log in.",
        "err_bad_key": "That key is not valid (unknown or revoked).", "err_not_found": "Not found.",
        "err_admin_only": "Only an admin key can pick a user.",
        "err_demo_not_empty": "Demo data loads only into an empty user.",
        "err_confirm_session": "The conversation was not deleted: what you typed is not its session id. Type {sid} exactly to delete it.",
        "err_confirm_purge": "Nothing was forgotten: what you typed is not your user id. Type {user} exactly to forget everything.",
        "err_import_empty": "Paste the edited MEMORY.md (or choose the file) first.",
        "err_import_changed": "The text changed after the preview, so nothing was written. These are the changes for the text as it is now: check them, then apply.",
        "err_import_unicode": "The text holds characters that are not valid Unicode (a lone surrogate).",
        "err_invalid": "Not accepted. {field}: {detail}", "err_backend": "A backend (LLM, embedder or database) failed: {detail}",
        "err_conflict": "Not done: {detail}",
        "err_form_type": "Send the form as application/x-www-form-urlencoded.",
        "err_form_size": "The form is larger than {limit} bytes (server.max_body_bytes).",
        "err_form_encoding": "The form is not UTF-8.", "err_form_unreadable": "The form could not be read.",
        "err_bulk_action": "Choose delete, archive, make active or restore.",
        "err_bulk_select": "Select from 1 to {n} memories first.",
        "err_too_long": "is longer than {n} characters", "err_number": "must be a number from 0 to 1, not “{value}”",
        "err_date": "must be a date as YYYY-MM-DD, not “{value}”", "err_choice": "must be one of {choices}, not “{value}”",
        "err_page": "must be a page number from 1, not “{value}”", "err_flag": "must be 1 or 0, not “{value}”",
        "superseded": "superseded", "timeline": "Timeline",
        "timeline_help": "Every version of this fact, oldest first, with when each held and where it came from.",
        "held_since": "since {start}", "held_span": "{start} – {end}", "this_version": "this page",
        "fact_changed": "The fact changed",
        "may_replace": "This may replace", "apply_change": "Yes, it replaces this",
        "may_replace_help": "memlane was not sure this new fact replaces an earlier one, so both still hold. "
                            "Apply the change, or keep both.",
        "keep_both": "Both hold",
        "fact_changed_help": "The new fact replaces this one from the day given; this one is kept with when it held, out of the agent's prompt. To correct a mistake, edit it above instead.",
        "new_fact": "The fact now", "valid_since": "Holds since (YYYY-MM-DD, empty: today)", "record_change": "Record the change",
        "replaced_by_notice": "This fact no longer holds: it was replaced on {day} by",
        "replaced_from_notice": "This fact holds until {day}; from then on:", "held": "Held", "changed": "Change recorded.",
        "back": "Back", "home": "Go to the memories",
        "import_other": "Import from another tool", "import_other_help": "Choose (or paste) an export: ChatGPT or Claude conversations.json, mem0 memories, a Letta .af agent file, or one markdown note. You will see what would be added before anything is written; importing again adds nothing.",
        "import_format": "Format", "import_file": "Export", "would_add": "Would add: {turns} turns in {sessions} conversations, {memories} memories",
        "already_there": "{n} already imported (not added again)", "skipped_records": "Skipped records",
        "import_confirm": "Import", "imported_notice": "Imported: {turns} turns, {memories} memories",
        "err_import_other_empty": "Choose or paste the export first.", "record": "Record",
    },
    "zh": {
        "app": "memlane", "skip": "跳到正文", "nav": "栏目",
        "memories": "记忆", "conversations": "对话", "files": "文件", "insight": "洞察",
        "forget_me": "忘记我", "logout": "退出", "signed_in_as": "当前用户", "admin": "管理员",
        "switch_user": "切换用户", "language": "语言",
        "login": "登录", "api_key": "API 密钥", "login_help": "粘贴一个 API 密钥（{cmd} 会打印一个）。你只会看到这个密钥对应的记忆。",
        "pick_user": "选择用户", "pick_user_help": "管理员密钥可以查看任意用户的记忆。",
        "user_id": "用户 id", "agent_id": "智能体 id（可选）", "open": "打开",
        "search": "搜索", "search_placeholder": "搜索记忆（关键词或语义）",
        "filters": "筛选", "category": "类别", "status": "状态", "any": "全部", "active": "活跃",
        "archived": "已归档", "deleted": "已删除", "source": "来源", "verified": "已确认",
        "pinned": "已置顶", "yes": "是", "no": "否", "min_score": "分数从", "max_score": "分数到",
        "since": "创建起始日", "until": "创建截止日", "sort": "排序", "order": "顺序",
        "relevance": "相关度", "score": "分数", "updated_at": "更新时间", "created_at": "创建时间",
        "last_activated": "最近使用", "activation_count": "使用次数", "content": "内容",
        "desc": "降序", "asc": "升序", "apply": "应用", "reset": "重置",
        "n_memories": "{n} 条记忆", "page_of": "第 {page} / {pages} 页", "prev": "上一页", "next": "下一页",
        "select": "选择", "select_all": "全选本页", "selected_action": "对选中的记忆：",
        "delete": "删除", "archive": "归档", "activate": "设为活跃", "restore": "恢复",
        "edit": "编辑", "save": "保存", "cancel": "取消", "pin": "置顶", "unpin": "取消置顶",
        "verify": "标记为已确认", "unverify": "取消确认", "undo": "撤销", "undo_last": "撤销上一次修改",
        "actions": "操作", "confirm_delete": "删除这条记忆？它会从搜索、文件和缓存中移除；可以撤销。",
        "yes_delete": "确认删除", "deleted_notice": "已删除。", "saved": "已保存。", "undone": "已撤销。",
        "empty": "这里还没有记忆。", "load_demo": "载入演示数据",
        "load_demo_help": "把 memlane 自带的演示对话（中英文）导入当前用户，并从中提取记忆。",
        "no_match": "没有匹配的记忆。",
        "fc_protected": "不会衰减（置顶、已确认或核心）", "fc_history": "作为历史保留：不会衰减", "fc_archived": "已归档",
        "fc_none": "十年内不会低于阈值", "fc_due_now": "下次整理时{action}",
        "fc_due": "约 {when} {action}", "fc_rule": "闲置 {grace} 天后每天 ×{factor}",
        "fc_now": "当前 {score}", "expires": "{when} 过期",
        "ARCHIVE": "归档", "DELETE": "删除", "DEMOTE": "降级",
        "memory": "记忆", "history": "历史", "kind": "变更", "actor": "操作者", "reason": "原因", "when": "时间",
        "field": "字段", "before": "之前", "after": "之后", "came_from": "来源",
        "session": "会话", "turns": "对话轮次", "no_source": "直接添加，并非从对话中提取。",
        "agent_unconfirmed": "智能体自行写入，未经本人确认：除非标记为已确认，否则会逐渐淡化",
        "related": "相关记忆", "related_help": "按向量相似度最接近的记忆。", "similarity": "相似度",
        "replaced": "它替换了什么", "contradicted": "与它矛盾的旧记忆",
        "gone": "这条记忆已删除。历史仍在；撤销可恢复它。",
        "times_used": "使用 {n} 次", "created": "创建", "updated": "更新",
        "sessions": "会话", "started": "开始", "ended": "结束", "messages": "消息数", "open_session": "查看",
        "search_turns": "在对话中搜索", "turns_found": "找到 {n} 条对话", "episode": "情节摘要",
        "goal": "目标", "outcome": "结果", "no_episode": "没有情节摘要（会话未结束或太短）。",
        "extracted": "从这个会话提取的记忆", "delete_session": "删除这个对话",
        "delete_session_help": "在所有存放的地方忘掉这个会话、它的对话轮次、摘要和任务。输入会话 id 确认。",
        "confirm": "确认", "no_sessions": "还没有对话。", "role": "角色",
        "memory_md": "MEMORY.md", "user_md": "USER.md", "download": "下载",
        "import_edits": "导入我的修改", "import_help": "粘贴（或选择）你修改过的 MEMORY.md。写入之前会先列出将要发生的变更。",
        "choose_file": "选择文件", "preview": "查看变更", "preview_title": "文件中的变更",
        "apply_changes": "应用这些变更", "no_changes": "文件没有新内容：无需应用。",
        "op": "操作", "new": "新", "shared": "用户共享（此智能体只读）", "line": "行", "imported": "已导入", "rendered": "渲染", "source_text": "原文",
        "chart_scores": "分数分布", "chart_categories": "各类别的记忆数",
        "chart_timeline": "活跃、归档、删除随时间变化", "chart_context": "上下文各区块的 token 数与预算",
        "context_title": "智能体拿到的上下文", "system_prompt": "系统提示词",
        "archive_below": "归档阈值", "jobs": "提取任务", "job_status": "状态", "attempts": "尝试次数",
        "next_at": "下次尝试", "last_error": "最近错误", "no_jobs": "没有排队、运行中或失败的提取任务。",
        "jobs_pending": "队列中等待的任务：{n}。",
        "context_query": "智能体针对这个问题会得到什么", "context_tokens": "共 {tokens} 个 token", "block": "区块",
        "tokens": "Token", "budget": "预算", "window": "窗口", "numbers": "数据",
        "stats_line": "{memories} 条记忆 · {sessions} 个会话 · {turns} 轮对话 · {episodes} 个情节 · {events} 条审计",
        "forget_title": "忘记我", "forget_help": "删除 memlane 为这个用户保存的一切：记忆、对话、情节、文件、缓存和向量。无法撤销。输入用户 id 确认。",
        "forget_type": "输入 {user} 以确认", "forget_button": "全部忘记",
        "forget_done": "已全部忘记。", "removed": "已移除",
        "notice_delete": "已删除 {n} 条。", "notice_archive": "已归档 {n} 条。", "notice_activate": "已将 {n} 条设为活跃。",
        "notice_restore": "已恢复 {n} 条。", "notice_deleted": "对话已删除（{n} 轮）。",
        "notice_import": "已应用：{ops}", "list_sep": "，", "error": "错误",
        "err_csrf": "表单已过期或来自别处。请刷新页面后重试。",
        "err_cross_site": "已拒绝：请求来自其他网站。",
        "err_signed_out": "你已退出登录。请刷新页面重新登录。",
        "err_bad_key": "密钥无效（不存在或已吊销）。", "err_not_found": "未找到。",
        "err_admin_only": "只有管理员密钥可以选择用户。",
        "err_demo_not_empty": "演示数据只能载入空用户。",
        "err_confirm_session": "对话未删除：输入的内容不是它的会话 id。请准确输入 {sid} 以删除。",
        "err_confirm_purge": "没有删除任何内容：输入的内容不是你的用户 id。请准确输入 {user} 以全部忘记。",
        "err_import_empty": "请先粘贴修改后的 MEMORY.md（或选择文件）。",
        "err_import_changed": "预览之后文本被改动了，因此没有写入任何内容。下面是按当前文本计算的变更：请确认后再应用。",
        "err_import_unicode": "文本含有无效的 Unicode 字符（孤立的代理项）。",
        "err_invalid": "未被接受。{field}：{detail}", "err_backend": "后端（LLM、嵌入模型或数据库）出错：{detail}",
        "err_conflict": "未执行：{detail}",
        "err_form_type": "请以 application/x-www-form-urlencoded 格式提交表单。",
        "err_form_size": "表单超过 {limit} 字节（server.max_body_bytes）。",
        "err_form_encoding": "表单不是 UTF-8 编码。", "err_form_unreadable": "无法读取表单。",
        "err_bulk_action": "请选择删除、归档、设为活跃或恢复。",
        "err_bulk_select": "请先选择 1 到 {n} 条记忆。",
        "err_too_long": "超过 {n} 个字符", "err_number": "必须是 0 到 1 之间的数，而不是“{value}”",
        "err_date": "必须是 YYYY-MM-DD 格式的日期，而不是“{value}”", "err_choice": "必须是 {choices} 之一，而不是“{value}”",
        "err_page": "必须是从 1 开始的页码，而不是“{value}”", "err_flag": "必须是 1 或 0，而不是“{value}”",
        "superseded": "已被取代", "timeline": "时间线",
        "timeline_help": "这个事实的每个版本，从早到晚，以及各自成立的时间和来源。",
        "held_since": "自 {start} 起", "held_span": "{start} 至 {end}", "this_version": "本页",
        "fact_changed": "事实变了",
        "may_replace": "这条可能取代", "apply_change": "是的，取代它",
        "may_replace_help": "memlane 不确定这条新事实是否取代了之前的一条，所以两条目前都有效。可以确认取代，或保留两条。",
        "keep_both": "两条都成立",
        "fact_changed_help": "新的事实从所填日期起取代这一条；这一条连同它成立的时间会被保留，但不再放进智能体的提示词。若只是写错了，请在上面编辑。",
        "new_fact": "现在的事实", "valid_since": "从哪天起成立（年-月-日，留空：今天）", "record_change": "记录这次变化",
        "replaced_by_notice": "这个事实已不再成立：它在 {day} 被取代为",
        "replaced_from_notice": "这个事实成立到 {day}，之后为：", "held": "成立时间", "changed": "已记录变化。",
        "back": "返回", "home": "回到记忆列表",
        "import_other": "从其他工具导入", "import_other_help": "选择（或粘贴）导出文件：ChatGPT 或 Claude 的 conversations.json、mem0 记忆、Letta 的 .af 智能体文件，或一篇 markdown 笔记。写入之前会先列出将要添加的内容；再次导入不会重复添加。",
        "import_format": "格式", "import_file": "导出内容", "would_add": "将添加：{sessions} 个对话中的 {turns} 条消息，{memories} 条记忆",
        "already_there": "{n} 条已导入（不会重复添加）", "skipped_records": "跳过的记录",
        "import_confirm": "导入", "imported_notice": "已导入：{turns} 条消息，{memories} 条记忆",
        "err_import_other_empty": "请先选择或粘贴导出内容。", "record": "记录",
    },
}


def negotiate(request: Request) -> str:
    """The language switch's cookie, else the first of ours in Accept-Language by weight."""
    chosen = request.cookies.get(COOKIE)
    if chosen in LANGUAGES:
        return chosen
    best, best_q = "en", -1.0
    for part in request.headers.get("accept-language", "")[:512].split(","):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                continue
        lang = tag.strip().lower().split("-")[0]
        if lang in LANGUAGES and q > best_q:
            best, best_q = lang, q
    return best


def text(lang: str, key: str, **values: object) -> str:
    """The message `key` in `lang` with `values` filled in; when a value is markup (an isolated
    user id, a <code>), the result is markup too, every other part escaped."""
    template = MESSAGES.get(lang, MESSAGES["en"]).get(key) or MESSAGES["en"].get(key, key)
    if any(isinstance(v, Markup) for v in values.values()):
        return escape(template).format(**values)
    return template.format(**values) if values else template


def translator(lang: str) -> Callable[..., str]:
    def t(key: str, **values: object) -> str:
        return text(lang, key, **values)
    return t
