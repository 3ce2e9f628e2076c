"""An OpenAI-compatible chat client over httpx.

OpenAI, DeepSeek, Qwen (DashScope compatible mode), Ollama, vLLM and llama.cpp all serve
`POST {base_url}/chat/completions`; they differ in which `response_format` they accept, so
the client asks for `json_schema`, steps down to `json_object`, then to a plain prompt when a
server rejects the mode, and remembers what worked. Retries are bounded and brief, and one
call never takes longer than `llm.deadline_s` in all; a refused connection (nothing
listening) fails at once. Long outages are the extraction queue's business (it backs off
for minutes to hours).
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from memlane.config import LLMConfig
from memlane.errors import BackendError
from memlane.llm.base import ChatMessage
from memlane.text import estimate_tokens

log = logging.getLogger(__name__)

_MODES = ("json_schema", "json_object", "none")
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Usage:
    """Token usage of one call, as the server reported it (or estimated when it did not)."""

    model: str
    prompt_tokens: int
    completion_tokens: int
    attempts: int
    seconds: float
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class OpenAICompatibleLLM:
    """`LLM` over any OpenAI-compatible server: `OpenAICompatibleLLM(LLMConfig(base_url=..., model=...))`.

    Every successful call appends a `Usage` to `.usage`.
    """

    def __init__(
        self,
        cfg: LLMConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not cfg.base_url:
            raise BackendError("llm.base_url is empty; set MEMLANE_LLM_BASE_URL to an OpenAI-compatible server")
        self.cfg = cfg
        self.model_id = cfg.model
        self.usage: list[Usage] = []
        self._mode: str = cfg.json_mode
        self._sleep = sleep
        headers = {"content-type": "application/json"}
        if cfg.api_key:
            headers["authorization"] = f"Bearer {cfg.api_key}"
        self._http = httpx.Client(
            base_url=cfg.base_url.rstrip("/") + "/", headers=headers,
            timeout=httpx.Timeout(cfg.timeout_s, connect=min(10.0, cfg.timeout_s)), transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    @property
    def tokens(self) -> int:
        return sum(u.total_tokens for u in self.usage)

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: dict[str, Any] | None = None) -> str:
        """The assistant's reply text; with `json_schema`, the server is asked for JSON of that shape."""
        started = time.monotonic()
        deadline = started + self.cfg.deadline_s
        attempts = 0
        while True:
            body = self._body(messages, json_schema)
            resp, attempts = self._post(body, attempts, deadline)
            if resp.status_code in (400, 422) and json_schema is not None and self._mode != "none" \
                    and _mentions_format(resp):
                # the server does not support this response_format: step down and remember it
                nxt = _MODES[_MODES.index(self._mode) + 1]
                log.info("LLM server rejected response_format=%s; retrying with %s", self._mode, nxt)
                self._mode = nxt
                continue
            break
        if resp.status_code >= 400:
            raise BackendError(
                f"LLM server {self.cfg.base_url} answered HTTP {resp.status_code} for model {self.model_id!r}: "
                f"{_excerpt(resp.text)}; check llm.base_url, llm.model and llm.api_key"
            )
        try:
            data = resp.json()
            message = data["choices"][0]["message"]
            text = message.get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise BackendError(
                f"LLM server {self.cfg.base_url} sent a reply that is not a chat completion: {_excerpt(resp.text)}"
            ) from exc
        if not isinstance(text, str):
            raise BackendError(f"LLM reply content is {type(text).__name__}, expected text: {_excerpt(resp.text)}")
        self._record(data.get("usage"), messages, text, attempts, time.monotonic() - started)
        return text

    # ---- internals --------------------------------------------------------------------

    def _body(self, messages: Sequence[ChatMessage], json_schema: dict[str, Any] | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_id, "messages": list(messages),
            "temperature": self.cfg.temperature, "max_tokens": self.cfg.max_tokens,
        }
        if json_schema is not None and self._mode == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": str(json_schema.get("title") or "answer")[:64], "schema": json_schema, "strict": False,
            }}
        elif json_schema is not None and self._mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _post(self, body: dict[str, Any], attempts: int, deadline: float) -> tuple[httpx.Response, int]:
        """POST with bounded retries on timeouts, dropped connections, 429 and 5xx, all
        within `deadline` (monotonic); a refused connection is not retried."""
        while True:
            attempts += 1
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise httpx.TimeoutException("no time left for another attempt")
                timeout = httpx.Timeout(min(self.cfg.timeout_s, left), connect=min(10.0, self.cfg.timeout_s, left))
                resp = self._send(body, timeout, deadline)
            except httpx.HTTPError as exc:
                unreachable = _unreachable(exc)
                wait = self._wait(attempts, None)
                if unreachable or attempts > self.cfg.max_retries or time.monotonic() + wait >= deadline:
                    why = unreachable or \
                        f"llm.timeout_s={self.cfg.timeout_s}, llm.deadline_s={self.cfg.deadline_s}"
                    raise BackendError(
                        f"LLM server {self.cfg.base_url} failed after {attempts} attempt(s): "
                        f"{type(exc).__name__}: {exc}; is it running? ({why})"
                    ) from exc
                self._sleep(wait)
                continue
            if resp.status_code in _RETRY_STATUS and attempts <= self.cfg.max_retries:
                wait = self._wait(attempts, resp.headers.get("retry-after"))
                if time.monotonic() + wait < deadline:
                    log.info("LLM server answered %s; retry %d of %d", resp.status_code, attempts,
                             self.cfg.max_retries)
                    self._sleep(wait)
                    continue
            return resp, attempts

    def _send(self, body: dict[str, Any], timeout: httpx.Timeout, deadline: float) -> httpx.Response:
        """One POST whose reply is read within `deadline` in all: the read timeout alone
        restarts with every chunk, so a server trickling bytes could hold a caller forever."""
        request = self._http.build_request("POST", "chat/completions", json=body, timeout=timeout)
        resp = self._http.send(request, stream=True)
        if resp.is_stream_consumed:  # an in-memory transport (tests) hands the body over read
            return resp
        try:
            raw = bytearray()
            for chunk in resp.iter_raw():
                raw += chunk
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("the reply was still arriving at llm.deadline_s", request=request)
        finally:
            resp.close()
        # a complete response from the raw bytes: decoding (gzip…) happens as usual
        return httpx.Response(resp.status_code, headers=resp.headers, content=bytes(raw), request=request)

    def _wait(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return max(0.0, min(float(retry_after), self.cfg.retry_after_max_s))
            except ValueError:
                pass  # an HTTP date: fall back to our own back-off
        return min(self.cfg.retry_backoff_s * 2 ** (attempt - 1), self.cfg.retry_after_max_s)

    def _record(self, usage: Any, messages: Sequence[ChatMessage], text: str, attempts: int, seconds: float) -> None:
        try:
            prompt, completion, estimated = int(usage["prompt_tokens"]), int(usage["completion_tokens"]), False
        except (KeyError, TypeError, ValueError):  # Ollama and llama.cpp may omit usage
            prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
            completion, estimated = estimate_tokens(text), True
        self.usage.append(Usage(self.model_id, prompt, completion, attempts, seconds, estimated))


def _mentions_format(resp: httpx.Response) -> bool:
    text = resp.text.lower()
    return "response_format" in text or "json_schema" in text or "json_object" in text or "format" in text


def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


__all__ = ["OpenAICompatibleLLM", "Usage"]


def _unreachable(exc: BaseException) -> str | None:
    """Why no retry can help, when the failure says so: nothing listens at the address, or the
    host name does not resolve. A retry a second later meets the same answer (issue 18: four
    tries of each call made an offline demo take 44.6 s)."""
    if not isinstance(exc, httpx.ConnectError):
        return None
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or "refused" in str(seen).lower():
            return "nothing is listening there"
        if isinstance(seen, socket.gaierror) or "name or service not known" in str(seen).lower():
            return "the host name does not resolve"
        seen = seen.__cause__ or seen.__context__
    return None
