"""The only HTTP client for OpenAI-compatible chat completions (`POST <base_url>/chat/completions`).

Library: **httpx2**, the maintained continuation of httpx (same API; httpx itself has had
no release since 0.28.1) and already installed with `huggingface_hub`, which
sentence-transformers needs, so it adds nothing to the environment. The `openai` SDK was
not chosen because it retries inside the client (its own backoff and status rules) where
ragtrack must count every attempt and decide which status is retried.

Concurrency: `concurrency` worker threads share one connection pool (measured on this
2-core machine, httpx2's sync client costs ~1.5 ms CPU per request against ~2.1 ms for
its asyncio client, and reaches a higher share of the throughput a server allows; see
`bench/bench_llm.py`). The workers are daemon threads: when a call fails for good, or
Ctrl-C/SIGTERM arrives, the batch raises at once, no new request starts, and a request
still in flight cannot hold the process open.

Rules, per call:
- each attempt gets `min(timeout_s, time left)`, for connecting, for each socket operation
  and for the whole reply (read in chunks, checked between them); the call as a whole
  (attempts and the waits between them) ends by `deadline_s`;
- retried (at most `max_retries` times): HTTP 408, 429, 5xx, and connection errors and
  timeouts. The wait is the server's `Retry-After` when it sends one (seconds or an HTTP
  date), else exponential backoff from `backoff_s` (doubling, capped at 30 s) with jitter
  (uniform in [½, 1] of it; seedable). A wait that would pass the deadline ends the call;
- never retried: every other status. 401/403 raise `LLMAuthError` (the key or its rights
  are wrong: every other call would fail the same way, so the batch stops at once);
- a 200 whose body is not JSON, or has no choices, is an `LLMError` (not retried: the
  server is not an OpenAI-compatible endpoint, or not answering this model).

Every error message names the endpoint and the model, never the key (it is read from the
environment variable named by `api_key_env`, masked in every message, and only sent in
the `Authorization` header; without the variable no header is sent, for servers without
authentication). Token usage and latency are recorded per call and summed per batch.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import queue
import random
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, Literal, overload

import httpx2
from pydantic import BaseModel, ConfigDict, Field

from ragtrack.clients.gencache import CacheEntry, GenCache, request_key
from ragtrack.core.redact import MASK, redact_text
from ragtrack.core.registry import Params, reaching

# httpx2 logs every request at INFO: one line per answer would bury the run's own console lines.
for _name in ("httpx2", "httpcore2"):
    logging.getLogger(_name).setLevel(logging.WARNING)

__all__ = ["BatchStats", "ChatResult", "LLMAuthError", "LLMClient", "LLMError", "LLMSettings", "Message"]

BACKOFF_CAP_S = 30.0
RETRY_STATUS = frozenset({408, 429})  # and every 5xx
_EXCERPT = 200  # characters of a reply body quoted in an error


class LLMSettings(Params):
    """Where and how to ask: shared by the `openai` generator and the `rubric_judge` scorer."""

    base_url: str = reaching("host", pattern=r"^https?://\S+$")  # e.g. http://127.0.0.1:8000/v1
    model: str = Field(min_length=1)
    api_key_env: str | None = reaching(
        "env", "OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )  # None: no key
    temperature: float = Field(0.0, ge=0)
    max_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    concurrency: int = Field(4, ge=1, le=512)
    timeout_s: float = Field(60.0, gt=0)
    deadline_s: float = Field(300.0, gt=0)
    max_retries: int = Field(4, ge=0)
    backoff_s: float = Field(0.5, ge=0)
    cache_dir: str | None = reaching(
        "cache", None
    )  # the generation cache's folder; None: $RAGTRACK_CACHE_DIR/generations

    def decoding(self) -> dict[str, Any]:
        """The decoding parameters sent with (and hashed into the cache key of) every request."""
        out: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.seed is not None:
            out["seed"] = self.seed
        return out


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: str
    content: str


class ChatResult(BaseModel):
    """One answer: its text, token usage, latency of the attempt that answered, and where it came from."""

    model_config = ConfigDict(frozen=True)

    text: str
    usage: dict[str, int]
    latency_ms: float
    finish_reason: str | None = None
    cached: bool = False
    attempts: int = 1


class BatchStats(BaseModel):
    """What a batch cost: requests sent, cache use, tokens and latency of the calls made (not the cached)."""

    requests: int = 0  # HTTP attempts, retries included
    retries: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    latencies_ms: list[float] = Field(default_factory=list)

    def add(self, result: ChatResult) -> None:
        """Count a call's latency and token usage."""
        self.latencies_ms.append(result.latency_ms)
        for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
            setattr(self, k, getattr(self, k) + result.usage.get(k, 0))

    def merge(self, other: BatchStats) -> None:
        """Add another batch's counts and latencies (a caller that asks in several rounds)."""
        for k in (
            "requests",
            "retries",
            "cache_hits",
            "cache_misses",
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
        ):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.latencies_ms.extend(other.latencies_ms)

    def metrics(self, prefix: str) -> dict[str, float]:
        """`<prefix>/cache_hits`, `/cache_misses`, `/requests`, `/retries`, token sums, latency mean and
        p95."""
        out = {
            f"{prefix}/{k}": float(getattr(self, k))
            for k in (
                "cache_hits",
                "cache_misses",
                "requests",
                "retries",
                "prompt_tokens",
                "completion_tokens",
                "total_tokens",
            )
        }
        if self.latencies_ms:
            ordered = sorted(self.latencies_ms)
            out[f"{prefix}/latency_ms_mean"] = math.fsum(ordered) / len(ordered)
            out[f"{prefix}/latency_ms_p95"] = ordered[
                min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)
            ]
        return out


class LLMError(RuntimeError):
    """A call that failed for good; the message names endpoint and model, never the key."""

    def __init__(self, endpoint: str, model: str, problem: str, *, secret: str | None = None) -> None:
        text = f"{endpoint} (model {model!r}): {problem}"
        if secret:
            text = text.replace(secret, MASK)
        super().__init__(redact_text(text))

    def __reduce__(self) -> tuple:
        # Rebuilt from its (already masked) message: `cls(*args)` would not match __init__.
        return (_rebuild, (type(self), self.args))


def _rebuild(cls: type[LLMError], args: tuple) -> LLMError:
    error = RuntimeError.__new__(cls)
    error.args = args
    return error


class LLMAuthError(LLMError):
    """401/403: the key is missing, wrong or lacks rights. Retrying cannot help; the run stops."""


class _Retryable(Exception):
    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


def _excerpt(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip().replace("\n", " ")
    return repr(text[:_EXCERPT] + ("…" if len(text) > _EXCERPT else ""))


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` in seconds: a number of seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


class LLMClient:
    """Chat completions against one endpoint and model, with the retry rules of the module docstring."""

    def __init__(self, settings: LLMSettings, *, jitter_seed: int | None = None) -> None:
        self.s = settings
        self.endpoint = settings.base_url.rstrip("/") + "/chat/completions"
        self._rng = random.Random(jitter_seed)
        self._key = (os.environ.get(settings.api_key_env) or None) if settings.api_key_env else None

    # ------------------------------------------------------------------ requests

    def body(self, messages: Sequence[Message]) -> dict[str, Any]:
        return {"model": self.s.model, "messages": [m.model_dump() for m in messages], **self.s.decoding()}

    def cache_key(self, messages: Sequence[Message]) -> str:
        return request_key(self.endpoint, self.s.model, [m.model_dump() for m in messages], self.s.decoding())

    def error(self, problem: str, auth: bool = False) -> LLMError:
        return (LLMAuthError if auth else LLMError)(self.endpoint, self.s.model, problem, secret=self._key)

    def backoff(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1-based), jittered."""
        base = min(BACKOFF_CAP_S, self.s.backoff_s * 2 ** (retry - 1))
        return base * (0.5 + 0.5 * self._rng.random())

    @overload
    def complete_all(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        cache: GenCache | None = None,
        desc: str = "llm",
        max_errors: Literal[0] = 0,
    ) -> tuple[list[ChatResult], BatchStats]: ...

    @overload
    def complete_all(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        cache: GenCache | None = None,
        desc: str = "llm",
        max_errors: int,
    ) -> tuple[list[ChatResult | LLMError], BatchStats]: ...

    def complete_all(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        cache: GenCache | None = None,
        desc: str = "llm",
        max_errors: int = 0,
    ) -> tuple[Sequence[ChatResult | LLMError], BatchStats]:
        """Answer every conversation (cache first), at most `concurrency` requests at a time, in input order.

        Each answer is appended to the cache as it arrives. The first call that fails for
        good stops the batch and raises its `LLMError`; answers already written stay cached.
        With `max_errors` > 0, that many calls may fail for good first: each leaves its
        `LLMError` in its place of the list (`ChatResult | LLMError`); an `LLMAuthError`
        always stops the batch.
        """
        from tqdm import tqdm

        stats = BatchStats()
        results: list[ChatResult | LLMError | None] = [None] * len(conversations)
        errors = [0]  # calls failed for good and kept (at most max_errors)
        keys = [self.cache_key(m) for m in conversations]
        todo: deque[int] = deque()
        for i, key in enumerate(keys):
            hit = cache.get(key) if cache is not None else None
            if hit is None:
                todo.append(i)
            else:
                results[i] = ChatResult(
                    text=hit.text,
                    usage=hit.usage,
                    latency_ms=hit.latency_ms,
                    finish_reason=hit.finish_reason,
                    cached=True,
                    attempts=0,
                )
        stats.cache_hits, stats.cache_misses = len(conversations) - len(todo), len(todo)
        lock = threading.Lock()
        stop = threading.Event()  # set when the batch ends early: workers take no new case and stop retrying
        done: queue.Queue[BaseException | None] = queue.Queue()
        limits = httpx2.Limits(
            max_connections=self.s.concurrency, max_keepalive_connections=self.s.concurrency
        )
        # No TLS context for a plain-http endpoint (loading the CA store costs ~0.1 s).
        http = httpx2.Client(limits=limits, verify=self.endpoint.startswith("https://"))

        def worker() -> None:
            while not stop.is_set():
                with lock:
                    if not todo:
                        return
                    i = todo.popleft()
                try:
                    result = self._call(http, conversations[i], stats, lock, stop)
                    if cache is not None:
                        cache.put(
                            CacheEntry(
                                key=keys[i],
                                model=self.s.model,
                                text=result.text,
                                usage=result.usage,
                                latency_ms=result.latency_ms,
                                finish_reason=result.finish_reason,
                            )
                        )
                except LLMError as e:
                    with lock:
                        kept = (
                            not isinstance(e, LLMAuthError) and not stop.is_set() and errors[0] < max_errors
                        )
                        errors[0] += kept
                    if kept:
                        results[i] = e
                        done.put(None)
                        continue
                    stop.set()
                    done.put(e)
                    return
                except BaseException as e:  # handed to the main thread, which raises it
                    stop.set()
                    done.put(e)
                    return
                results[i] = result
                with lock:
                    stats.add(result)
                done.put(None)

        with tqdm(
            total=len(conversations),
            initial=stats.cache_hits,
            desc=desc,
            unit="req",
            file=sys.stderr,
            disable=None,
            dynamic_ncols=True,
        ) as bar:
            n_todo = len(todo)
            for _ in range(min(self.s.concurrency, n_todo)):
                threading.Thread(target=worker, name="ragtrack-llm", daemon=True).start()
            try:
                for _ in range(n_todo):
                    error = done.get()
                    if error is not None:
                        raise error
                    bar.update()
            finally:
                stop.set()
                # a worker still in a request (the batch failed) ends with an error nobody waits for
                http.close()
        return [r for r in results if r is not None], stats

    def _call(
        self,
        http: httpx2.Client,
        messages: Sequence[Message],
        stats: BatchStats,
        lock: threading.Lock,
        stop: threading.Event,
    ) -> ChatResult:
        deadline = time.monotonic() + self.s.deadline_s
        body = self.body(messages)
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        attempt = 0
        while True:
            attempt += 1
            budget = min(self.s.timeout_s, deadline - time.monotonic())
            with lock:
                stats.requests += 1
            t0 = time.perf_counter()
            try:
                status, retry_after, content = self._post(http, body, headers, budget)
                return self._parse(status, retry_after, content, (time.perf_counter() - t0) * 1000.0, attempt)
            except httpx2.TimeoutException:
                failure = _Retryable(f"no reply within {budget:.3g} s")
            except httpx2.TransportError as e:
                failure = _Retryable(
                    f"{'cannot connect' if isinstance(e, httpx2.ConnectError) else type(e).__name__}: {e}"
                )
            except _Retryable as e:
                failure = e
            if attempt > self.s.max_retries:
                tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
                raise self.error(f"{failure} (gave up after {tries}; max_retries={self.s.max_retries})")
            wait = failure.retry_after if failure.retry_after is not None else self.backoff(attempt)
            if time.monotonic() + wait >= deadline:
                raise self.error(
                    f"{failure} (attempt {attempt}; waiting {wait:.3g} s more would pass the deadline of "
                    f"{self.s.deadline_s:g} s)"
                )
            with lock:
                stats.retries += 1
            if stop.wait(wait):
                raise self.error("stopped: another call of the batch failed")

    def _post(
        self, http: httpx2.Client, body: dict[str, Any], headers: dict[str, str], budget: float
    ) -> tuple[int, str | None, bytes]:
        """One attempt: status, Retry-After and body, ended after `budget` seconds however slowly the reply
        trickles in."""
        end = time.monotonic() + budget
        with http.stream(
            "POST", self.endpoint, json=body, headers=headers, timeout=httpx2.Timeout(budget)
        ) as response:
            chunks = []
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                if time.monotonic() > end:
                    raise httpx2.ReadTimeout("reply too slow", request=response.request)
            return response.status_code, response.headers.get("retry-after"), b"".join(chunks)

    def _parse(
        self, status: int, retry_after: str | None, content: bytes, latency_ms: float, attempt: int
    ) -> ChatResult:
        if status in (401, 403):
            env = self.s.api_key_env
            hint = (
                f"${env} is set but rejected"
                if self._key
                else f"${env} is not set"
                if env
                else "no api_key_env: no key was sent"
            )
            raise self.error(f"HTTP {status}: authentication failed ({hint}): {_excerpt(content)}", auth=True)
        if status in RETRY_STATUS or status >= 500:
            raise _Retryable(f"HTTP {status}: {_excerpt(content)}", retry_after_s(retry_after))
        if status != 200:
            what = " (unknown model or wrong base_url?)" if status == 404 else ""
            raise self.error(f"HTTP {status}{what}: {_excerpt(content)}")
        try:
            obj = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            raise self.error(f"the reply is not JSON: {_excerpt(content)}") from None
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if not isinstance(choices, list) or not choices:
            raise self.error(f"the reply has no choices: {_excerpt(content)}")
        first = choices[0]
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("content", ""), (str, type(None))):
            raise self.error(f"choices[0] has no message with text content: {_excerpt(content)}")
        raw_usage = obj.get("usage")
        usage = (
            {k: v for k, v in raw_usage.items() if isinstance(v, int) and not isinstance(v, bool)}
            if isinstance(raw_usage, dict)
            else {}
        )
        reason = first.get("finish_reason")
        return ChatResult(
            text=message.get("content") or "",
            usage=usage,
            latency_ms=latency_ms,
            finish_reason=reason if isinstance(reason, str) else None,
            attempts=attempt,
        )
