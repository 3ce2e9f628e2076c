"""A real `memlane serve` process on 127.0.0.1 for the server tests, and its keys."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).parents[1]
START_SECONDS = 60.0  # a cold import of fastapi + mcp on a busy 2-core box


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env(home: Path, **extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), e.get("PYTHONPATH")]))
    return {**e, "MEMLANE_HOME": str(home), "MEMLANE_EMBEDDER": "hash", **extra}


def cli(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memlane", *args], env=env(home, **extra), capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def create_key(home: Path, *args: str) -> str:
    done = cli(home, "keys", "create", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


class Server:
    """`memlane serve` in a subprocess; `stop()` sends SIGTERM (graceful), `kill()` SIGKILL."""

    def __init__(self, home: Path, *args: str, **extra: str) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(home.parent / f"serve-{self.port}.log", "w+b")  # noqa: SIM115 - a file the process writes
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memlane", "serve", "--host", "127.0.0.1", "--port", str(self.port), *args],
            env=env(home, **extra), stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"memlane serve exited {self.proc.returncode}: {self.output()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"memlane serve did not answer within {START_SECONDS} s: {self.output()[-2000:]}")

    def output(self) -> str:
        if self.log.closed:
            return ""
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def client(self, key: str | None = None, **headers: str) -> httpx.Client:
        h = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers={**h, **headers}, timeout=30)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def error_shape(r: httpx.Response, status: int) -> dict[str, Any]:
    """The response is `status` with memlane's JSON error body; returns the body."""
    assert r.status_code == status, (r.status_code, r.text[:500])
    body = r.json()
    assert isinstance(body.get("error"), str) and isinstance(body.get("detail"), str), body
    assert body.get("request_id") == r.headers.get("x-request-id"), body
    return body


class Writers:
    """Threads adding turns through servers until stopped (or their server dies), each
    recording the turns acknowledged: `acked[name]`, in order. `urls` maps a writer's name
    (its session id) to the server it writes to."""

    def __init__(self, key: str, urls: dict[str, str]) -> None:
        self.acked: dict[str, list[str]] = {name: [] for name in urls}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._write, args=(url, key, name), daemon=True)
                         for name, url in urls.items()]
        for t in self._threads:
            t.start()

    def wait_each(self, turns: int, timeout: float) -> None:
        """Until every writer has `turns` acknowledged, or `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while min(map(len, self.acked.values())) < turns and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout)

    def _write(self, url: str, key: str, name: str) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as c:
            i = 0
            while not self._stop.is_set():
                text = f"{name} turn {i} marker-{name}-{i}"
                try:
                    r = c.post(f"/v1/sessions/{name}/messages", json={"messages": [{"content": text}]})
                except httpx.TransportError:
                    return  # the server died mid-request: this turn was never acknowledged
                if r.status_code == 201:
                    self.acked[name].append(text)
                i += 1
