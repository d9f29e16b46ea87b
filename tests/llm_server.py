"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

    with LLMServer() as srv:                          # answers "ECHO <last message>" to every request
        ... base_url=srv.url ...
        assert srv.count == 3

    LLMServer(script=[status(503), reply("ok")])      # one reply per request; the last one repeats
    LLMServer(script=lambda n, body: reply(...))      # or a function of (request number from 0, JSON body)
    LLMServer(delay_s=0.05)                           # a fixed delay before every reply
    LLMServer(script=route(("Rate", reply("7")), ("Split", lambda prompt: reply(...))))   # by prompt text

Replies: `reply(text)` (a normal completion with usage), `status(code, body, headers)`,
`raw(body)` (200 with any bytes), `hang()` (never answers, until the server stops).
Every request is recorded (`requests`: the JSON body and the headers), counted (`count`)
and, with `log_path`, appended to a file as one line (for counting across processes).
The server runs in a thread of the calling process; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypedDict, Unpack


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


def completion(
    text: str, *, model: str = "test-model", prompt_tokens: int = 10, completion_tokens: int = 5
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class Usage(TypedDict, total=False):
    """The token counts `reply` may set (`completion`'s defaults otherwise)."""

    prompt_tokens: int
    completion_tokens: int


def reply(text: str, **usage: Unpack[Usage]) -> Reply:
    return Reply(body=json.dumps(completion(text, **usage)).encode())


def status(code: int, body: str | dict[str, Any] = "", headers: dict[str, str] | None = None) -> Reply:
    data = json.dumps(body) if isinstance(body, dict) else body
    return Reply(status=code, body=data.encode(), headers=headers or {})


def raw(body: str | bytes, code: int = 200) -> Reply:
    return Reply(status=code, body=body.encode() if isinstance(body, str) else body)


def hang() -> Reply:
    return Reply(hang=True)


def echo(n: int, body: dict[str, Any]) -> Reply:
    """The default: `ECHO <content of the last message>`."""
    return reply("ECHO " + body["messages"][-1]["content"])


def route(
    *rules: tuple[str, Reply | Callable[[str], Reply]], default: Callable[[int, dict[str, Any]], Reply] = echo
) -> Callable[[int, dict[str, Any]], Reply]:
    """A script that answers by the last message's content: the first rule whose marker occurs in it
    answers (its `Reply`, or its function of the content); else `default`."""

    def script(n: int, body: dict[str, Any]) -> Reply:
        content = body["messages"][-1]["content"]
        for marker, answer in rules:
            if marker in content:
                return answer(content) if callable(answer) else answer
        return default(n, body)

    return script


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (timeout, cancelled batch) closes its connection: not news


Script = Sequence[Reply] | Callable[[int, dict[str, Any]], Reply]


class LLMServer:
    def __init__(self, script: Script = echo, *, delay_s: float = 0.0, log_path: Path | None = None) -> None:
        self.script = script
        self.delay_s = delay_s
        self.log_path = log_path
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests the server was answering at one time
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r["body"] for r in self.requests]

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            n = len(self.requests)
            self.requests.append({"body": body, "headers": headers})
        if callable(self.script):
            return self.script(n, body)
        return self.script[min(n, len(self.script) - 1)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            # keep-alive: a client's connection pool is exercised as in production
            protocol_version = "HTTP/1.1"
            # headers and body go out as separate writes: no 40 ms delayed-ACK stall
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(data)
                except ValueError:
                    body = {"_raw": data.decode("utf-8", "replace")}
                r = server._next(body, dict(self.headers))
                if server.log_path is not None:
                    with server.log_path.open("a", encoding="utf-8") as f:
                        f.write(json.dumps(body, ensure_ascii=False) + "\n")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    r = status(404, {"error": f"no route {self.path}"})
                if r.hang:
                    server._stop.wait()
                    return
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if server.delay_s:
                        time.sleep(server.delay_s)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                self.send_response(r.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(r.body)))
                for k, v in r.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(r.body)

        return Handler

    def start(self) -> LLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def server_process(*args: str) -> Iterator[str]:
    """`python -m tests.llm_server ARGS` in its own process (its own GIL: benchmarks), until the block ends;
    yields its base URL."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.llm_server", *args],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def main() -> None:
    """`python -m tests.llm_server [--delay S] [--judge]`: serve echo replies (with --judge, well-formed
    replies to the rag/earag judge prompts, `tests.llm_judges.lenient_judge`) in this process (its own GIL)
    until stdin closes; the first line on stdout is the base URL."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--delay", type=float, default=0.0, help="seconds to wait before every reply")
    p.add_argument("--judge", action="store_true", help="answer the rag/earag judge prompts")
    args = p.parse_args()
    script: Script = echo
    if args.judge:
        from tests.llm_judges import lenient_judge

        script = lenient_judge()
    with LLMServer(script=script, delay_s=args.delay) as srv:
        print(srv.url, flush=True)
        sys.stdin.read()
        print(f"served {srv.count} requests", file=sys.stderr)


if __name__ == "__main__":
    main()
