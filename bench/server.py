"""`memlane serve` under load, on 127.0.0.1 only (issue 15).

Two runs against one real server process (uvicorn, one engine, hash embedder so the numbers
are the server's own; the e5 query embedding is measured apart, in process):

- mixed: first one client for 5 s (a request's cost when nothing queues), then `--clients` (50)
  concurrent clients spread over `--procs` (5) load processes for `--seconds` (30) of add_messages (40 %),
  search (40 %) and build_context (20 %) over `--users` (100) users, each with its own key;
  requests/s, p50/p95/p99 per route, errors, and the server's RSS growth. Baseline in the same
  run: `Memory.search` in process on the same home (the HTTP + auth + JSON cost is the ratio).
- writers: `--writers` (20) clients adding turns for `--writer-seconds` with the indexer and
  the consolidation scheduler running (polling every second, consolidating every ~4 s);
  then every acknowledged turn is looked up: lost turns (target 0).

    .venv/bin/python bench/server.py                  # 30 s + 30 s
    .venv/bin/python bench/server.py --seconds 5 --writer-seconds 5 --users 20   # a short run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import console, percentile, table, write_result  # noqa: E402

ROOT = Path(__file__).parents[1]
TOPICS = ["tea", "hiking", "python", "rust", "kyoto", "orchids", "chess", "sailing", "bread", "jazz"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed(home: Path, users: int) -> tuple[list[str], dict[str, float]]:
    """Users with 20 memories and a 10-turn session each; their keys; the in-process baseline."""
    from memlane import Config, Memory
    from memlane.server.keys import KeyStore

    mem = Memory(Config.load(store={"home": str(home)}, embedding={"provider": "hash", "background": False}))
    keys = KeyStore(mem.config.db_path)
    out = []
    rng = random.Random(7)
    for u in range(users):
        uid = f"user{u:03d}"
        for i in range(20):
            t = rng.choice(TOPICS)
            mem.add(f"{uid} fact {i}: likes {t} and {rng.choice(TOPICS)} on day {i}", user_id=uid,
                    category="preference")
        mem.add_messages("s0", [{"role": "user" if i % 2 == 0 else "assistant",
                                 "content": f"turn {i} about {rng.choice(TOPICS)}"} for i in range(10)], user_id=uid)
        out.append(keys.create(user_id=uid)[0])
    lat = []
    for _ in range(300):
        uid = f"user{rng.randrange(users):03d}"
        t0 = time.perf_counter()
        mem.search(rng.choice(TOPICS), user_id=uid, limit=5)
        lat.append((time.perf_counter() - t0) * 1000)
    keys.close()
    mem.close()
    return out, {"p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95)}


def e5_query_ms() -> dict[str, float] | None:
    """The default embedder's query embedding, apart from the server (None when unavailable)."""
    try:
        from memlane.config import EmbeddingConfig
        from memlane.embeddings import make_embedder

        emb = make_embedder(EmbeddingConfig(provider="e5"))
        emb.embed(["warm up"])
        lat = []
        for i in range(50):
            t0 = time.perf_counter()
            emb.embed([f"what does the user like about {TOPICS[i % len(TOPICS)]}"])
            lat.append((time.perf_counter() - t0) * 1000)
        return {"p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95)}
    except Exception as exc:  # noqa: BLE001 - reported, not fatal: the model may be absent
        console.print(f"e5 query embedding not measured: {exc}")
        return None


class Served:
    extra_env: dict[str, str] = {}  # --env KEY=VALUE settings for the server process

    def __init__(self, home: Path, *, scheduler: bool) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # the caller's MEMLANE_SERVER__* settings (threads, ...) pass through; nothing else of theirs
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_") or k.startswith("MEMLANE_SERVER__")}
        env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")])),
                   MEMLANE_HOME=str(home), MEMLANE_EMBEDDER="hash", MEMLANE_SERVER__SCHEDULER=str(scheduler).lower(),
                   MEMLANE_LIFECYCLE__SCHEDULER_POLL_SECONDS="1", MEMLANE_LIFECYCLE__SCHEDULE_HOURS="0.001")
        env.update(self.extra_env)
        self.log = open(home.parent / f"serve-{self.port}.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "memlane", "serve", "--port", str(self.port),
                                      "--log-level", "warning"], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        raise RuntimeError("memlane serve did not start; see serve.log")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> list[str]:
        """Stop gracefully; the server's warnings and errors, for the report."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        text = Path(self.log.name).read_text(encoding="utf-8", errors="replace")
        return [line for line in text.splitlines() if "WARNING" in line or "ERROR" in line or "Error" in line][:20]


async def _mixed_raw(url: str, keys: list[str], clients: int, seconds: float, seed: int = 0) -> dict[str, Any]:
    lat: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    samples: list[str] = []
    stop_at = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(n: int, http: httpx.AsyncClient) -> None:
        rng = random.Random(seed * 1000 + n)
        i = 0
        while time.monotonic() < stop_at:
            u = rng.randrange(len(keys))
            h = {"Authorization": f"Bearer {keys[u]}"}
            roll = rng.random()
            if roll < 0.4:
                route, req = "add_messages", http.post(f"/v1/sessions/c{seed}-{n}/messages", headers=h, json={"messages": [
                    {"role": "user", "content": f"client {n} message {i}: I tried {rng.choice(TOPICS)} today"}]})
            elif roll < 0.8:
                route, req = "search", http.post("/v1/search", headers=h, json={"query": rng.choice(TOPICS), "limit": 5})
            else:
                route, req = "build_context", http.post("/v1/context", headers=h,
                                                        json={"session_id": "s0", "query": rng.choice(TOPICS)})
            t0 = time.perf_counter()
            try:
                r = await req
                ok = r.status_code < 400
                if not ok and len(samples) < 5:
                    samples.append(f"{route} {r.status_code} {r.text[:200]}")
            except httpx.HTTPError as exc:
                ok = False
                if len(samples) < 5:
                    samples.append(f"{route} {type(exc).__name__}")
            lat[route].append((time.perf_counter() - t0) * 1000)
            if not ok:
                errors[route] += 1
            i += 1

    t0 = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        await asyncio.gather(*(client(n, http) for n in range(clients)))
    wall = time.perf_counter() - t0
    return {"lat": dict(lat), "errors": dict(errors), "samples": samples, "wall": wall}


def _mixed_proc(args: tuple[str, list[str], int, float, int]) -> dict[str, Any]:
    return asyncio.run(_mixed_raw(*args))


def mixed(url: str, keys: list[str], clients: int, seconds: float, procs: int = 1) -> dict[str, Any]:
    """`clients` clients spread over `procs` load processes (one Python process cannot drive
    50 connections without becoming the bottleneck itself)."""
    procs = max(1, min(procs, clients))
    shares = [clients // procs + (1 if i < clients % procs else 0) for i in range(procs)]
    if procs == 1:
        parts = [asyncio.run(_mixed_raw(url, keys, clients, seconds))]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(procs) as pool:
            parts = list(pool.map(_mixed_proc, [(url, keys, n, seconds, i) for i, n in enumerate(shares)]))
    lat: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    samples: list[str] = []
    for part in parts:
        for k, v in part["lat"].items():
            lat[k] += v
        for k, e in part["errors"].items():
            errors[k] += e
        samples += part["samples"]
    wall = max(p["wall"] for p in parts)
    routes = {name: {"requests": len(v), "rps": len(v) / wall, "p50_ms": percentile(v, 50),
                     "p95_ms": percentile(v, 95), "p99_ms": percentile(v, 99), "errors": errors[name]}
              for name, v in sorted(lat.items())}
    total = sum(len(v) for v in lat.values())
    return {"seconds": wall, "requests": total, "rps": total / wall, "errors": sum(errors.values()),
            "error_samples": samples[:5], "load_processes": procs, "routes": routes}


async def writers(url: str, keys: list[str], clients: int, seconds: float) -> dict[str, Any]:
    acked: dict[tuple[int, str], list[str]] = defaultdict(list)
    errors = 0
    lat: list[float] = []
    stop_at = time.monotonic() + seconds

    async def client(n: int, http: httpx.AsyncClient) -> None:
        nonlocal errors
        u = n % len(keys)
        h = {"Authorization": f"Bearer {keys[u]}"}
        i = 0
        while time.monotonic() < stop_at:
            text = f"writer {n} turn {i}: remember that I like {TOPICS[i % len(TOPICS)]} number {i}"
            t0 = time.perf_counter()
            try:
                r = await http.post(f"/v1/sessions/w{n}/messages", headers=h, json={"messages": [
                    {"role": "user", "content": text}, {"role": "assistant", "content": f"noted {n}/{i}"}]})
                if r.status_code == 201:
                    acked[(u, f"w{n}")].append(text)
                else:
                    errors += 1
            except httpx.HTTPError:
                errors += 1
            lat.append((time.perf_counter() - t0) * 1000)
            i += 1

    t0 = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        await asyncio.gather(*(client(n, http) for n in range(clients)))
        wall = time.perf_counter() - t0
        lost = 0
        for (u, sid), texts in acked.items():
            r = await http.get(f"/v1/sessions/{sid}/turns", headers={"Authorization": f"Bearer {keys[u]}"},
                               params={"limit": 10_000})
            stored = {t["content"] for t in r.json()["turns"]}
            lost += sum(1 for t in texts if t not in stored)
    n = sum(len(v) for v in acked.values())
    return {"seconds": wall, "requests": len(lat), "rps": len(lat) / wall, "acknowledged_turns": 2 * n,
            "lost_turns": lost, "errors": errors, "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95),
            "p99_ms": percentile(lat, 99)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--procs", type=int, default=5, help="load-generating processes the clients are spread over")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--writers", type=int, default=20)
    ap.add_argument("--writer-seconds", type=float, default=30.0)
    ap.add_argument("--no-e5", action="store_true", help="skip the in-process e5 query embedding timing")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for the server process, e.g. MEMLANE_EMBEDDING__BACKGROUND=false")
    args = ap.parse_args()
    Served.extra_env = dict(kv.split("=", 1) for kv in args.env)

    with tempfile.TemporaryDirectory(prefix="memlane-serverbench-") as tmp:
        home = Path(tmp) / "home"
        t0 = time.perf_counter()
        keys, baseline = seed(home, args.users)
        console.print(f"seeded {args.users} users in {time.perf_counter() - t0:.1f} s")
        server = Served(home, scheduler=False)  # the mixed run: requests only
        try:
            # one client first: what a request costs when nothing queues (the baseline of the run)
            single = mixed(server.url, keys, 1, min(5.0, args.seconds))
            rss0 = server.rss_mb()
            mix = mixed(server.url, keys, args.clients, args.seconds, args.procs)
            rss1 = server.rss_mb()
            status = httpx.get(f"{server.url}/healthz", timeout=10).status_code
        finally:
            problems = server.stop()
        server = Served(home, scheduler=True)  # the writers: consolidation every ~4 s, indexer on
        try:
            rss2a = server.rss_mb()
            write = asyncio.run(writers(server.url, keys, args.writers, args.writer_seconds))
            rss2 = server.rss_mb()
        finally:
            problems += server.stop()
    embed = None if args.no_e5 else e5_query_ms()

    rows = [[name, r["requests"], r["rps"], r["p50_ms"], r["p95_ms"], r["p99_ms"], r["errors"]]
            for name, r in mix["routes"].items()]
    rows.append(["all", mix["requests"], mix["rps"], "", "", "", mix["errors"]])
    rows += [[f"{name} (1 client)", r["requests"], r["rps"], r["p50_ms"], r["p95_ms"], r["p99_ms"], r["errors"]]
             for name, r in single["routes"].items()]
    console.print(table(f"mixed: {args.clients} clients × {args.seconds:.0f} s over {args.users} users "
                        f"(RSS {rss0:.0f} → {rss1:.0f} MB)", ["route", "requests", "req/s", "p50 ms", "p95 ms",
                                                               "p99 ms", "errors"], rows))
    console.print(table(f"writers: {args.writers} clients × {args.writer_seconds:.0f} s, indexer + scheduler on "
                        f"(RSS {rss2a:.0f} → {rss2:.0f} MB)",
                        ["run", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms", "errors", "acked turns", "lost"],
                        [["add_messages", write["requests"], write["rps"], write["p50_ms"], write["p95_ms"],
                          write["p99_ms"], write["errors"], write["acknowledged_turns"], write["lost_turns"]]]))
    search = mix["routes"].get("search", {})
    ratio = search.get("p50_ms", 0.0) / baseline["p50_ms"] if baseline["p50_ms"] else 0.0
    console.print(f"in-process Memory.search p50 {baseline['p50_ms']:.2f} ms (baseline); server search p50 is "
                  f"{ratio:.1f}× that under {args.clients} clients"
                  + (f"; e5 query embedding (apart) p50 {embed['p50_ms']:.1f} ms, p95 {embed['p95_ms']:.1f} ms"
                     if embed else ""))
    if mix["error_samples"]:
        console.print(f"error samples: {mix['error_samples']}")
    if problems:
        console.print("server log:\n" + "\n".join(problems))
    data = {"clients": args.clients, "users": args.users, "seconds": args.seconds, "writers": args.writers,
            "writer_seconds": args.writer_seconds, "single_client": single, "mixed": mix, "writers_run": write,
            "rss_mb": {"mixed_start": rss0, "mixed_end": rss1, "mixed_growth": rss1 - rss0,
                       "writers_start": rss2a, "writers_end": rss2, "writers_growth": rss2 - rss2a},
            "healthz_after_mixed": status, "inprocess_search": baseline, "search_p50_ratio": ratio,
            "e5_query_embedding": embed, "server_log_problems": problems}
    path = write_result("server", data) if args.out is None else args.out
    if args.out is not None:
        import json

        args.out.write_text(json.dumps(data, indent=2))
    console.print(f"wrote {path}")


if __name__ == "__main__":
    main()
