"""The reliability promises of RELIABILITY.md, each checked by a short run of
bench/reliability.py: SIGKILLs over a mixed workload, processes × threads on one home,
a fuzz of every way data gets in, and forgetting. The full run is `make bench`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import reliability  # noqa: E402

FUZZ_PARTS = ["api", "importers", "jsonl", "markdown", "llm"]


@pytest.fixture(scope="module")
def kills(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """10 SIGKILLs on 2 homes: 1 inside a slow extraction, 2 across imports, 2 across
    MEMORY.md imports, the rest at random."""
    return reliability.run_kills(10, seed=12, chain=5, lease_every=6, cap=5.5, max_delay=1.5, patience=2,
                                 workdir=tmp_path_factory.mktemp("kills"))


@pytest.fixture(scope="module")
def concurrency(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """3 processes × 2 threads for 8 s on one home, a scheduler with a hostile LLM beside them."""
    return reliability.run_concurrency(8.0, procs=3, threads=2, seed=12, workdir=tmp_path_factory.mktemp("conc"))


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return reliability.run_fuzz(150, seed=12, flood=200, workdir=tmp_path_factory.mktemp("fuzz"))


@pytest.fixture(scope="module")
def forget(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return reliability.run_forget(workdir=tmp_path_factory.mktemp("forget"))


# ---- no acknowledged write is lost; nothing is stored twice --------------------------------


def test_sigkill_loses_no_acknowledged_write(kills: dict[str, Any]) -> None:
    assert kills["trials"] == 10
    assert kills["acknowledged_writes_lost"] == 0, kills["samples"]


def test_rerun_after_sigkill_stores_nothing_twice(kills: dict[str, Any]) -> None:
    """Over the kills, and in the state a kill leaves between commit and acknowledgement made
    on purpose: a conversation file imported twice, a MEMORY.md edit imported again."""
    assert kills["rerun_probe"] == {"import_copies": 0, "md_copies": 0}
    assert kills["duplicates"] == 0, kills["samples"]


def test_sigkill_leaves_the_database_intact(kills: dict[str, Any]) -> None:
    assert kills["integrity_failures"] == 0, kills["samples"]


def test_concurrent_processes_lose_no_acknowledged_write(concurrency: dict[str, Any]) -> None:
    assert concurrency["acknowledged_turns"] > 0 and concurrency["acknowledged_memories"] > 0
    assert concurrency["acknowledged_writes_lost"] == 0


# ---- no memory is deleted without a person's or a rule's intent ----------------------------


def test_sigkill_workload_deletes_no_memory_without_intent(kills: dict[str, Any]) -> None:
    assert kills["deleted_without_intent"] == 0, kills["deletions_by_actor"]


def test_concurrent_workload_deletes_no_memory_without_intent(concurrency: dict[str, Any]) -> None:
    assert concurrency["deleted_without_intent"] == 0, concurrency["deletions_by_actor"]


def test_hostile_files_delete_no_memory(fuzz: dict[str, Any]) -> None:
    """A foreign MEMORY.md, a skipped entry, an accepted export file: none deletes a memory."""
    assert fuzz["deleted_without_intent"] == 0, [fuzz["parts"][p]["poison_samples"] for p in ("jsonl", "markdown")]


def test_llm_cannot_delete_what_a_person_stated(fuzz: dict[str, Any]) -> None:
    """Prompt injection: a model told to delete everything deletes nothing the person stated,
    verified or pinned."""
    assert fuzz["injection_deleted"] == []


# ---- no scope reads another ----------------------------------------------------------------


def test_no_scope_reads_another_under_concurrency(concurrency: dict[str, Any]) -> None:
    assert concurrency["operations"] > 100
    assert concurrency["cross_scope_leaks"] == 0, concurrency["leak_samples"]


# ---- a bad input fails alone, with a clear error --------------------------------------------


@pytest.mark.parametrize("part", FUZZ_PARTS)
def test_hostile_input_gets_a_clean_error(fuzz: dict[str, Any], part: str) -> None:
    """Anything raised is a MemlaneError; the dict names each raw type with a sample input."""
    result = fuzz["parts"][part]
    assert result["calls"] > 0
    assert result["raw_exceptions"] == 0, result["raw_types"]


def test_accepted_input_poisons_nothing_after_it(fuzz: dict[str, Any]) -> None:
    """After an accepted input the scope still exports, syncs MEMORY.md, drains and consolidates."""
    assert fuzz["poisoned"] == 0, [fuzz["parts"][p]["poison_samples"] for p in FUZZ_PARTS]


def test_concurrent_workload_raises_no_error(concurrency: dict[str, Any]) -> None:
    assert concurrency["worker_exits"] == []
    assert concurrency["errors"] == 0, concurrency["error_samples"]


def test_sigkill_workload_raises_no_error(kills: dict[str, Any]) -> None:
    assert kills["worker_exits"] == 0 and kills["check_errors"] == 0, kills["samples"]
    assert kills["workload_raw_errors"] + kills["workload_clean_errors"] == 0, kills["workload_error_types"]


# ---- nothing stuck ---------------------------------------------------------------------------


def test_dead_process_lease_is_taken_over_within_5s(kills: dict[str, Any]) -> None:
    assert kills["targeted"].get("slow", 0) >= 1
    assert kills["not_recovered"] == 0, kills["samples"]
    assert kills["recovery_max_s"] is not None and kills["recovery_max_s"] <= 5.0


def test_scheduler_survives_bad_input_and_bad_scopes(concurrency: dict[str, Any]) -> None:
    assert concurrency["scheduler_alive"], concurrency["scheduler_died_of"]
    assert concurrency["scheduler_runs"] >= 1  # it did run, over every scope


# ---- forgetting is complete ------------------------------------------------------------------


def test_delete_leaves_no_copy_outside_the_database(forget: dict[str, Any]) -> None:
    assert forget["delete_residue_outside_db"] == {}


def test_purge_leaves_no_byte_of_the_user_under_the_home(forget: dict[str, Any]) -> None:
    assert forget["purge_available"], "Memory.purge(user_id=...) does not exist"
    assert forget["purge_residue_before"] > 0  # the probe did find the text before the purge
    assert forget.get("purge_error") is None
    assert forget["purge_residue"] == {}
    assert forget["keeper_intact"]


def test_deleted_memory_can_be_restored(forget: dict[str, Any]) -> None:
    assert forget["restore_available"], "Memory.restore(memory_id, user_id=...) does not exist"
    assert forget["restore_ok"]
