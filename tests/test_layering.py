"""Imports point downward: the feature modules take the engine parts they use
(`memlane.parts`), never the `Memory` façade, and they work with any object that has them."""

from __future__ import annotations

import ast
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import memlane
from memlane import (
    context,
    lifecycle,
    markdown,
    mdsync,
    parts,
    portable,
    sessions,
    undo,
    userprofile,
)
from memlane.api import Memory
from memlane.config import Config
from memlane.llm import LLM
from memlane.models import Scope
from memlane.store import Store
from memlane.tools import MemoryTools

PACKAGE = Path(memlane.__file__).parent
# The faces of the one core: the façade itself, the package that re-exports it (`from memlane
# import Memory`), the async wrapper and the front ends, with everything under them.
FACES = ("memlane.api", "memlane.aio", "memlane.__main__", "memlane.cli", "memlane.server", "memlane.webui",
         "memlane.integrations")


def _module(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    names = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(names)


def _is_face(module: str) -> bool:
    return module == "memlane" or any(module == f or module.startswith(f + ".") for f in FACES)


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    """Every memlane module `path` imports (also under TYPE_CHECKING or inside a function);
    `from memlane import x` names the submodule x, or the package when x is not one."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])])
            for a in node.names:
                sub = f"{base}.{a.name}"
                is_sub = (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py").exists() or \
                    (PACKAGE.parent / Path(*sub.split("."))).is_dir()
                found.append((node.lineno, sub if is_sub else base))
    return [(line, name) for line, name in found if name == "memlane" or name.startswith("memlane.")]


def test_only_the_faces_import_the_facade() -> None:
    modules = {path: _module(path) for path in sorted(PACKAGE.rglob("*.py"))}
    assert "memlane.sessions" in modules.values() and "memlane.api" in modules.values()
    wrong = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
             for path, module in modules.items() if not _is_face(module)
             for line, name in _imports(path, module) if _is_face(name)]
    assert wrong == [], "a feature module reaches up to a face; give it the parts it uses (memlane.parts)"
    # and the check sees an upward import where there is one
    assert any(name == "memlane.api" for _, name in _imports(PACKAGE / "aio.py", "memlane.aio"))


def _private_reaches(source: str, names: tuple[str, ...] | None) -> list[tuple[int, str]]:
    """(line, `x._name`) in `source` where x is one of `names` (None: any name but self and cls)."""
    return [(node.lineno, f"{node.value.id}.{node.attr}") for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and (node.value.id in names if names is not None else node.value.id not in ("self", "cls"))]


# modules that work on objects they are given through those objects' protocols alone:
# `memlane copy` reads and writes both stores through `store.protocol.Copying`
THROUGH_PROTOCOLS = ("store/copy.py",)


def test_no_module_reaches_into_another_objects_private_members() -> None:
    """`x._name` only where x is the module's own object (self, cls) or the module itself
    imported; follow-up work subscribes to the engine's notices (signals.py) instead."""
    def reaches(path: Path, names: tuple[str, ...] | None) -> list[str]:
        return [f"{path.relative_to(PACKAGE.parent)}:{line} {what}"
                for line, what in _private_reaches(path.read_text(encoding="utf-8"), names)]

    wrong = [w for path in sorted(PACKAGE.rglob("*.py")) for w in reaches(path, ("mem", "memory", "engine", "parts", "m"))]
    wrong += [w for rel in THROUGH_PROTOCOLS for w in reaches(PACKAGE / rel, None)]
    assert wrong == []
    assert [n for p in PROTOCOLS for n in _members(p) if n.startswith("_")] == []
    # and the check sees a reach where there is one, and an object's own member is none
    assert _private_reaches("def f(dst):\n    dst._many('x', [])\n", None) == [(2, "dst._many")]
    assert _private_reaches("class S:\n    def f(self):\n        return self._q('x')\n", None) == []


# the underscore names of an API that are public by its own documentation
PUBLIC_UNDERSCORES = {"_replace", "_asdict", "_fields", "_make", "_exit"}  # namedtuple; os._exit


def _foreign_privates(source: str) -> list[tuple[int, str]]:
    """(line, `x._name`) where `_name` is not a name this file defines or binds itself and x is
    not self or cls: a reach into another module's (or its objects') private member, whatever x
    is called."""
    tree = ast.parse(source)
    own = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    own |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    own |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    own |= {a.asname or a.name.split(".")[-1] for n in ast.walk(tree) if isinstance(n, ast.alias) for a in [n]}
    return [(node.lineno, ast.unparse(node)) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
            and node.attr not in own | PUBLIC_UNDERSCORES
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]  # its own, or inherited


def test_no_module_uses_a_private_name_it_does_not_define() -> None:
    wrong = [f"{path.relative_to(PACKAGE.parent)}:{line} {what}" for path in sorted(PACKAGE.rglob("*.py"))
             for line, what in _foreign_privates(path.read_text(encoding="utf-8"))]
    assert wrong == [], "use the other module's public name (or make one), not its private member"
    # and the check sees a reach where there is one, and a module's own private names are none
    assert _foreign_privates("from memlane.store import pgtext\nok = pgtext._fits('x')\n") == [(2, "pgtext._fits")]
    assert _foreign_privates("class A:\n    def _f(self): ...\ndef g(a): return a._f()\n") == []


def _under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


# Retrieval lies under the engine and the features: it ranks what the store holds with the
# text helpers and the core's models and configuration, and reaches up to nothing else.
BELOW_RETRIEVAL = ("memlane.retrieval", "memlane.store", "memlane.models", "memlane.config", "memlane.errors",
                   "memlane.validate", "memlane.text", "memlane.cjkwords", "memlane.dates", "memlane.crosslingual",
                   "memlane.bridge", "memlane.slots", "memlane.roles", "memlane.naming")  # the last three: word lists


def test_retrieval_imports_neither_the_facade_nor_a_feature() -> None:
    modules = {path: _module(path) for path in sorted((PACKAGE / "retrieval").rglob("*.py"))}
    assert {"memlane.retrieval.search", "memlane.retrieval.bm25"} <= set(modules.values())
    wrong = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
             for path, module in modules.items() for line, name in _imports(path, module)
             if not _under(name, BELOW_RETRIEVAL)]
    assert wrong == [], "retrieval reaches up to the façade, a feature or the engine"
    # and the check sees an upward import where there is one
    assert not _under("memlane.sessions", BELOW_RETRIEVAL) and not _under("memlane.api", BELOW_RETRIEVAL)


def test_the_store_takes_only_the_leaf_bm25_from_retrieval() -> None:
    """One BM25 for the stores and the file search: the store imports it, a module that
    imports nothing of memlane's, and nothing else of retrieval (which imports the store)."""
    taken = {name for path in sorted((PACKAGE / "store").rglob("*.py"))
             for _, name in _imports(path, _module(path)) if _under(name, ("memlane.retrieval",))}
    assert taken == {"memlane.retrieval.bm25"}
    assert _imports(PACKAGE / "retrieval" / "bm25.py", "memlane.retrieval.bm25") == []
    assert _imports(PACKAGE / "retrieval" / "__init__.py", "memlane.retrieval") == []


def _members(protocol: type) -> set[str]:
    """The attributes and methods a Protocol of memlane.parts declares, its bases' included."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls.__module__ == parts.__name__:
            names |= set(cls.__dict__.get("__annotations__", {}))
            names |= {n for n, v in vars(cls).items() if inspect.isfunction(v) or isinstance(v, property)}
    return {n for n in names if not (n.startswith("__") and n.endswith("__"))}


PROTOCOLS = [v for v in vars(parts).values()
             if isinstance(v, type) and v.__module__ == parts.__name__ and getattr(v, "_is_protocol", False)]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_memory_has_every_member_of_every_protocol(memory: Memory, protocol: type) -> None:
    assert _members(protocol)
    missing = sorted(n for n in _members(protocol) if not hasattr(memory, n))
    assert missing == [], f"Memory no longer satisfies parts.{protocol.__name__}"


@dataclass
class Engine:
    """Configuration, store, clock and LLM, and nothing else of the engine."""

    config: Config
    store: Store
    clock: Callable[[], datetime]
    llm: LLM | None = None


def test_the_memory_files_are_written_and_read_with_plain_parts(memory: Memory) -> None:
    kept = memory.add("用户对花生过敏", user_id="lin", category="fact", importance="high")
    memory.add("Lin prefers dark roast coffee", user_id="lin", category="preference")
    memory.add("Someone else's secret", user_id="other", category="fact")
    engine = Engine(memory.config, memory.store, memory.clock)  # no search, no writes, no worker
    scope = Scope.of("lin")

    path = markdown.write_memory_md(engine, scope)
    file = markdown.read_memory_file(path)
    assert sorted(e.content for e in file.entries) == sorted(["用户对花生过敏", "Lin prefers dark roast coffee"])
    # the manifest written with it tells memlane's own lines from a person's edit
    assert [op.op for op in mdsync.plan_import(engine, scope, file) if op.op != "SKIP"] == []
    path.write_text(path.read_text(encoding="utf-8").replace("用户对花生过敏", "用户对花生和芝麻过敏"),
                    encoding="utf-8")
    edits = [op for op in mdsync.plan_import(engine, scope, markdown.read_memory_file(path)) if op.op != "SKIP"]
    assert [(op.op, op.memory_id, op.content) for op in edits] == [("UPDATE", kept.id, "用户对花生和芝麻过敏")]

    profile = userprofile.write_user_md(engine, scope).read_text(encoding="utf-8")
    assert "花生" in profile and "dark roast" in profile and "secret" not in profile
    core = context.core_memories(engine, scope, memory.config.context)
    assert sorted(m.content for m in core) == sorted(e.content for e in file.entries)


class Only:
    """Exactly the members of one Protocol, taken from a real `Memory`: a module that reaches
    for anything else of the façade fails with AttributeError."""

    def __init__(self, memory: Memory, protocol: type) -> None:
        object.__setattr__(self, "_memory", memory)
        object.__setattr__(self, "_names", _members(protocol))
        object.__setattr__(self, "_protocol", protocol.__name__)

    def __getattr__(self, name: str) -> Any:
        if name not in self._names:
            raise AttributeError(f"{name!r} is not a member of parts.{self._protocol}")
        return getattr(self._memory, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._names:
            raise AttributeError(f"{name!r} is not a member of parts.{self._protocol}")
        setattr(self._memory, name, value)


def _protocol_of(fn: Callable[..., Any]) -> type:
    """The Protocol a module's function declares for its first argument."""
    hints = typing.get_type_hints(fn, vars(parts) | vars(inspect.getmodule(fn)))
    return hints[next(iter(inspect.signature(fn).parameters))]


def test_feature_modules_work_through_only_the_parts_they_declare(make_memory: Callable[..., Memory],
                                                                  tmp_path: Path) -> None:
    memory = make_memory()
    scope = Scope.of("lin")
    first = memory.add("Lin's cat is called Miso", user_id="lin", category="fact", importance="high")
    memory.add_messages("s1", [{"role": "user", "content": "Tell me about my cat"}], user_id="lin")

    def through(fn: Callable[..., Any]) -> Only:
        return Only(memory, _protocol_of(fn))

    # sessions: the scratchpad's focus moves to the recent tasks
    sessions.update_scratchpad(through(sessions.update_scratchpad), scope, focus="plan the trip", done=None)
    sessions.update_scratchpad(through(sessions.update_scratchpad), scope, focus="book the hotel", done=None)
    pad = memory.scratchpad(user_id="lin")
    assert (pad.current_focus, [t["task"] for t in pad.recent_tasks]) == ("book the hotel", ["plan the trip"])

    # undo: an edit rolled back, audited
    memory.update(first.id, content="Lin's cat is called Tofu", user_id="lin")
    undo.undo(through(undo.undo), scope, first.id)
    assert memory.get(first.id, user_id="lin").content == "Lin's cat is called Miso"

    # the agent tools: remembering a known fact reinforces it instead of storing a twin
    tools = MemoryTools(Only(memory, parts.Tooling), user_id="lin", session_id="s1")
    again = tools.call("remember", {"content": "Lin's cat is called Miso"})
    assert (again["id"], again.get("already_known")) == (first.id, True)
    assert [h["id"] for h in tools.call("search_memory", {"query": "cat Miso"})["memories"]] == [first.id]

    # the context: the relevant memory and the session's turn are in the prompt
    ctx = context.build_context(through(context.build_context), "s1", user_id="lin", query="what is my cat called")
    prompt = ctx.render()
    assert "Miso" in prompt and "Tell me about my cat" in prompt

    # consolidation: every step runs on its declared parts, MEMORY.md is written
    report = lifecycle.consolidate(through(lifecycle.consolidate), scope)
    assert report.errors == [] and report.scopes == [scope]
    assert "Miso" in markdown.memory_path(memory, scope).read_text(encoding="utf-8")

    # export / import between two homes
    exported = tmp_path / "lin.jsonl"
    exported.write_text(portable.export_scope(through(portable.export_scope), scope), encoding="utf-8")
    other = make_memory(home=tmp_path / "other")
    portable.import_scope(Only(other, _protocol_of(portable.import_scope)), exported, user_id="lin")
    assert [h.memory.id for h in other.search("cat", user_id="lin") if h.memory] == [first.id]


# ---- the store (issue 31): small modules, no cycle, the database drivers behind it -----------

STORE = PACKAGE / "store"
DRIVERS = ("apsw", "psycopg", "psycopg_pool", "pgvector", "sqlite_vec")
BACKENDS = ("memlane.store.sqlite", "memlane.store.postgres")


def _top_level_imports(path: Path) -> list[tuple[int, str]]:
    """Every top-level package `path` imports (also inside a function or under TYPE_CHECKING)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def test_no_module_is_over_700_lines_and_the_facade_is_under_600() -> None:
    sizes = {str(p.relative_to(PACKAGE.parent)): len(p.read_text(encoding="utf-8").splitlines())
             for p in sorted(PACKAGE.rglob("*.py"))}
    assert {p: n for p, n in sizes.items() if n > 700} == {}, "a module past 700 lines holds several jobs: split it"
    assert sizes["memlane/api.py"] <= 600, "Memory validates and delegates: move the work into a module below it"


def test_no_store_module_is_over_700_lines() -> None:
    sizes = {str(p.relative_to(PACKAGE.parent)): len(p.read_text(encoding="utf-8").splitlines())
             for p in sorted(STORE.rglob("*.py"))}
    assert "memlane/store/sqlite/__init__.py" in sizes and "memlane/store/postgres/__init__.py" in sizes
    assert {p: n for p, n in sizes.items() if n > 700} == {}, "split the module by the jobs it does"


def test_only_the_store_talks_to_the_database_drivers() -> None:
    wrong = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
             for path in sorted(PACKAGE.rglob("*.py")) if STORE not in path.parents
             for line, name in _top_level_imports(path) if name in DRIVERS]
    assert wrong == [], "database code belongs in memlane.store, behind its protocols"
    # and the check sees a driver where there is one
    assert any(name == "apsw" for _, name in _top_level_imports(STORE / "sqlite" / "base.py"))


def test_nothing_outside_the_store_names_a_backend() -> None:
    wrong = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
             for path in sorted(PACKAGE.rglob("*.py")) if STORE not in path.parents
             for line, name in _imports(path, _module(path))
             if any(name == b or name.startswith(b + ".") for b in BACKENDS)]
    assert wrong == [], "choose a backend through memlane.store.open_store / open_key_table"


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of the graph (its modules in order, the first one again at the end), or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = 1
        path.append(module)
        for nxt in sorted(graph.get(module, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[module] = 2
        return []

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return []


def test_the_store_has_no_import_cycle() -> None:
    graph = {_module(p): {name for _, name in _imports(p, _module(p)) if name.startswith("memlane.store")}
             for p in sorted(STORE.rglob("*.py"))}
    assert _cycle(graph) == [], "a store module imports one that imports it back (even inside a function)"
    # and the check sees a cycle where there is one
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def _graph() -> dict[str, set[str]]:
    """Every module of memlane → the modules of memlane it imports (also inside a function or
    under TYPE_CHECKING)."""
    return {_module(p): {name for _, name in _imports(p, _module(p))} for p in sorted(PACKAGE.rglob("*.py"))}


def test_the_package_has_no_import_cycle() -> None:
    """Imports point one way everywhere (issue 31): the Protocols the features take (parts.py,
    services.py) name no class that takes them, a package's protocol sits in a leaf module its
    backends import (embeddings/base.py, llm/base.py), the web UI's pages import its plumbing
    and `app.WebUI` imports the pages."""
    graph = _graph()
    assert {"memlane.parts", "memlane.worker", "memlane.webui.app", "memlane.embeddings.hashing"} <= set(graph)
    assert _cycle(graph) == [], "a module imports one that imports it back (even inside a function)"
    # and the check sees a cycle where there is one: parts naming the worker's class again
    found = _cycle({**graph, "memlane.parts": graph["memlane.parts"] | {"memlane.worker"}})
    assert {"memlane.parts", "memlane.worker"} <= set(found) and found[0] == found[-1]
