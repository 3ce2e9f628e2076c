"""`memlane serve` under attack, on 127.0.0.1 only (issue 28).

Two real servers with the default e5 embedder: one in open mode (a loopback home where no key
was ever made, what `memlane demo --serve` runs) and one keyed. Each attack runs for
`--seconds` while two well-behaved clients measure `/healthz` and another user's search
(query embedding included: the latency a user sees); the same clients measure an idle server
first, in the same run (the baseline).

- rebinding: every route (REST, admin, MCP, web UI, assets) with a foreign Host header, in
  both modes, with a key and without; target 0 answered.
- cross-site: every route from another origin (`Origin`, `Sec-Fetch-Site`) with the content
  types a plain form or a no-preflight fetch can send, no key; target 0 answered.
- unauthenticated bodies: `--attackers` clients sending 8 MB bodies (declared and chunked)
  without a key.
- long queries: `--attackers` clients with a key searching with the longest query allowed
  (`search.max_query_chars` Chinese characters) and one past it.
- message floods: `--attackers` clients with a key posting the most messages one request takes
  (`server.max_messages_per_request`) and one more.
- slow clients: `--slow` connections dribbling their headers or bodies; how many are still
  open past `server.header_seconds` / `body_seconds` (target 0).

Targets: `/healthz` p95 ≤ 50 ms and the other user's search p95 ≤ 100 ms during each attack.

    .venv/bin/python bench/server_attack.py                 # ~3 min
    .venv/bin/python bench/server_attack.py --seconds 5     # a short run
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import console, percentile, table, temp_home, write_result  # noqa: E402

ROOT = Path(__file__).parents[1]
EVIL = "https://evil.example"
QUESTIONS = ["what does the user like to drink", "用户对什么过敏", "where does the user work",
             "用户周末喜欢做什么", "what is the user's sister called"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return {**env, "MEMLANE_HOME": str(home), "MEMLANE_SERVER__HEADER_SECONDS": "2",
            "MEMLANE_SERVER__BODY_SECONDS": "2"}


def cli(home: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "memlane", *args], env=_env(home), capture_output=True, text=True,
                          timeout=300, check=True)
    return done.stdout.strip()


class Server:
    def __init__(self, home: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(home.parent / f"serve-{self.port}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen([sys.executable, "-m", "memlane", "serve", "--port", str(self.port)],
                                     env=_env(home), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.3)
        raise RuntimeError("memlane serve did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def every_route() -> list[tuple[str, str]]:
    from memlane.config import Config
    from memlane.server import create_app
    from memlane.server.app import route_table

    return [(m, re.sub(r"\{[^}]+\}", "x1", p)) for m, p in route_table(create_app(Config(), host="127.0.0.1"))]


def sweep(server: Server, routes: list[tuple[str, str]], key: str | None) -> dict[str, Any]:
    """Requests a page of another site or a rebound name could make; those answered."""
    answered: list[str] = []
    sent = 0
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    with httpx.Client(base_url=server.url, timeout=30) as c:
        for method, path in routes:
            body = method in ("POST", "PUT", "PATCH")
            for host in (f"rebind.evil.example:{server.port}", f"127.0.0.1.nip.example:{server.port}"):
                r = c.request(method, path, headers={"Host": host, **auth, "Content-Type": "application/json"},
                              content=b"{}" if body else None)
                sent += 1
                if r.status_code != 421:
                    answered.append(f"rebind {method} {path} {r.status_code}")
            if key:
                continue  # a page cannot send a key: cross-site requests carry none
            for headers in ({"Origin": EVIL}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}):
                for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"):
                    r = c.request(method, path, headers={**headers, "Content-Type": kind},
                                  content=b"a=1" if body else None)
                    sent += 1
                    if r.status_code != 403:
                        answered.append(f"cross-site {method} {path} {r.status_code}")
                    if not body:
                        break
    return {"sent": sent, "answered": len(answered), "examples": answered[:10]}


class Probe:
    """Two well-behaved clients: /healthz, and one user's search, each in a loop of its own."""

    def __init__(self, server: Server, key: str | None) -> None:
        self.server, self.key = server, key
        self.health: list[float] = []
        self.search: list[float] = []
        self.errors = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._loop, args=(kind,), daemon=True) for kind in ("h", "s")]

    def __enter__(self) -> Probe:
        auth = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        with httpx.Client(base_url=self.server.url, headers=auth, timeout=120) as c:  # warm: not measured
            c.post("/v1/search", json={"query": QUESTIONS[0]})
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(60)

    asked = itertools.count()  # every probe query is new: none is answered from the query cache

    def _loop(self, kind: str) -> None:
        auth = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        with httpx.Client(base_url=self.server.url, headers=auth, timeout=60) as c:
            i = 0
            while not self._stop.is_set():
                t = time.perf_counter()
                try:
                    if kind == "h":
                        ok = c.get("/healthz").status_code == 200
                    else:
                        n = next(Probe.asked)
                        ok = c.post("/v1/search", json={"query": f"{QUESTIONS[n % len(QUESTIONS)]} {n}"}
                                    ).status_code == 200
                except httpx.HTTPError:
                    ok = False
                ms = (time.perf_counter() - t) * 1000
                (self.health if kind == "h" else self.search).append(ms)
                self.errors += not ok
                i += 1
                time.sleep(0.05)

    def summary(self) -> dict[str, Any]:
        return {"healthz_p50_ms": percentile(self.health, 50), "healthz_p95_ms": percentile(self.health, 95),
                "search_p50_ms": percentile(self.search, 50), "search_p95_ms": percentile(self.search, 95),
                "probes": len(self.health) + len(self.search), "probe_errors": self.errors}


def attack(seconds: float, workers: int, one: Callable[[httpx.Client, int], int], url: str) -> dict[str, Any]:
    """`workers` threads calling `one(client, i)` (it returns the status) for `seconds`."""
    stop = time.monotonic() + seconds
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def run() -> None:
        with httpx.Client(base_url=url, timeout=120) as c:
            i = 0
            while time.monotonic() < stop:
                try:
                    code = one(c, i)
                except httpx.HTTPError:
                    code = -1
                with lock:
                    statuses[code] = statuses.get(code, 0) + 1
                i += 1

    threads = [threading.Thread(target=run, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 180)
    return {"attack_requests": sum(statuses.values()), "statuses": {str(k): v for k, v in sorted(statuses.items())}}


def slow_clients(server: Server, n: int, seconds: float) -> dict[str, Any]:
    """`n` connections: half dribble a request head a byte a second, half a body; how many
    the server still holds after `seconds`."""
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        if i % 2:
            s.sendall(f"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
                      "Content-Length: 1000\r\n\r\n{".encode())
        else:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        s.setblocking(False)
        socks.append(s)
    end = time.monotonic() + seconds
    open_ = set(range(n))
    while time.monotonic() < end and open_:
        for i in list(open_):
            try:
                socks[i].send(b"a")
                data = socks[i].recv(4096)
                if data == b"":
                    open_.discard(i)
            except BlockingIOError:
                pass
            except OSError:
                open_.discard(i)
        time.sleep(1.0)
    for s in socks:
        s.close()
    return {"slow_connections": n, "still_open_after_s": seconds, "still_open": len(open_)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--seconds", type=float, default=15.0, help="each attack's length")
    ap.add_argument("--attackers", type=int, default=4, help="attacking clients at once")
    ap.add_argument("--slow", type=int, default=40, help="slow connections")
    ap.add_argument("--out", default="server_attack", help="result name under bench/results/")
    args = ap.parse_args()

    from memlane.config import Config

    limits = Config()
    tmp = temp_home("memlane-attack-")
    open_home, keyed_home = tmp / "open" / "home", tmp / "keyed" / "home"
    from memlane import Memory

    facts = ["The user is allergic to peanuts", "用户在一家银行工作", "The user's sister is called Mei",
             "用户喜欢周末去爬山", "The user drinks green tea every morning"]
    for home, user in ((open_home, "local"), (keyed_home, "victim")):
        home.mkdir(parents=True)
        mem = Memory(home=home)
        for i, fact in enumerate(facts * 4):
            mem.add(f"{fact} ({i})", user_id=user)
        mem.close()
    victim = cli(keyed_home, "keys", "create", "--user", "victim")
    mallory = cli(keyed_home, "keys", "create", "--user", "mallory")
    admin = cli(keyed_home, "keys", "create", "--admin")
    routes = every_route()
    results: dict[str, Any] = {"routes": len(routes), "seconds": args.seconds, "attackers": args.attackers}
    rows: list[list[Any]] = []
    open_server, keyed_server = Server(open_home), Server(keyed_home)
    try:
        results["sweep_open"] = sweep(open_server, routes, None)
        results["sweep_keyed"] = sweep(keyed_server, routes, None)
        results["sweep_keyed_admin"] = sweep(keyed_server, routes, admin)
        for name in ("sweep_open", "sweep_keyed", "sweep_keyed_admin"):
            r = results[name]
            rows.append([name.replace("sweep_", "foreign host / cross-site, "), f"{r['sent']} sent",
                         f"{r['answered']} answered", "", "", "0 answered"])

        big = b"[" + b"0," * 4_000_000 + b"0]"
        zh = "花生过敏" * (limits.search.max_query_chars // 4)
        msgs = [{"content": f"flood {i}"} for i in range(limits.server.max_messages_per_request)]
        k = {"Authorization": f"Bearer {mallory}"}

        def chunks() -> Any:
            for i in range(0, len(big), 1 << 20):
                yield big[i:i + 1 << 20]

        attacks: dict[str, Callable[[httpx.Client, int], int]] = {
            "idle (baseline)": lambda c, i: (time.sleep(0.2), 0)[1],
            "unauthenticated 8 MB bodies": lambda c, i: c.post(
                "/v1/search", content=big if i % 2 else chunks(),
                headers={"Content-Type": "application/json"}).status_code,
            "long queries (key)": lambda c, i: c.post(
                "/v1/search", json={"query": zh + ("花" if i % 5 == 0 else "")}, headers=k).status_code,
            "message floods (key)": lambda c, i: c.post(
                f"/v1/sessions/flood{i % 3}/messages", json={"messages": msgs + ([{"content": "x"}] if i % 2 else [])},
                headers=k).status_code,
        }
        for name, one in attacks.items():
            with Probe(keyed_server, victim) as probe:
                time.sleep(1.0)
                out = attack(args.seconds, 1 if name.startswith("idle") else args.attackers, one, keyed_server.url)
            out.update(probe.summary())
            results[name] = out
            rows.append([name, f"{out['attack_requests']} req", json.dumps(out["statuses"]),
                         f"{out['healthz_p50_ms']:.1f} / {out['healthz_p95_ms']:.1f}",
                         f"{out['search_p50_ms']:.1f} / {out['search_p95_ms']:.1f}",
                         "≤ 50 / ≤ 100 ms p95"])
        with Probe(keyed_server, victim) as probe:
            time.sleep(1.0)
            slow = slow_clients(keyed_server, args.slow, 8.0)
        slow.update(probe.summary())
        results["slow clients"] = slow
        rows.append(["slow clients (head/body 2 s limit)", f"{slow['slow_connections']} conns",
                     f"{slow['still_open']} open after 8 s", f"{slow['healthz_p50_ms']:.1f} / {slow['healthz_p95_ms']:.1f}",
                     f"{slow['search_p50_ms']:.1f} / {slow['search_p95_ms']:.1f}", "0 open"])
    finally:
        open_server.stop()
        keyed_server.stop()
    console.print(table("memlane serve under attack (127.0.0.1, e5)", ["attack", "sent", "outcome",
                        "healthz p50 / p95 ms", "other user's search p50 / p95 ms", "target"], rows))
    console.print(f"results: {write_result(args.out, results)}")


if __name__ == "__main__":
    main()
