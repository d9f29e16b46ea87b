"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1: answers, retry rules, deadline,
concurrency."""

from __future__ import annotations

import socket
import time

import pytest

from ragtrack.clients.gencache import GenCache
from ragtrack.clients.llm import LLMAuthError, LLMClient, LLMError, LLMSettings, Message, retry_after_s
from tests.llm_server import LLMServer, hang, raw, reply, status

CANARY = "sk-canary-llm-7Hq2Zx9Pw4"


def _client(url: str, **params) -> LLMClient:
    params = {
        "model": "m1",
        "backoff_s": 0.01,
        "max_retries": 3,
        "timeout_s": 5.0,
        "deadline_s": 10.0,
        **params,
    }
    return LLMClient(LLMSettings(base_url=url, **params), jitter_seed=0)


def _ask(client: LLMClient, *questions: str, cache: GenCache | None = None):
    return client.complete_all([[Message(role="user", content=q)] for q in questions or ("q",)], cache=cache)


def test_answer_text_usage_and_latency_are_recorded():
    with LLMServer() as srv:
        (r,), stats = _ask(_client(srv.url), "hello")
    assert (r.text, r.usage["total_tokens"], r.latency_ms > 0, stats.total_tokens, srv.count) == (
        "ECHO hello",
        15,
        True,
        15,
        1,
    )


def test_request_carries_model_messages_and_decoding_params():
    with LLMServer() as srv:
        _ask(_client(srv.url, temperature=0.3, max_tokens=64, seed=7), "hello")
    body = srv.bodies()[0]
    assert body == {
        "model": "m1",
        "messages": [{"role": "user", "content": "hello"}],
        "temperature": 0.3,
        "max_tokens": 64,
        "seed": 7,
    }


def test_key_comes_from_the_named_environment_variable(monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", CANARY)
    with LLMServer() as srv:
        _ask(_client(srv.url, api_key_env="MY_LLM_KEY"))
    assert srv.requests[0]["headers"]["Authorization"] == f"Bearer {CANARY}"


def test_no_authorization_header_without_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LLMServer() as srv:
        _ask(_client(srv.url))
    assert "Authorization" not in srv.requests[0]["headers"]


def test_no_key_variable_reads_no_variable_and_sends_no_header(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    with LLMServer() as srv:
        _ask(_client(srv.url, api_key_env=None))
    assert "Authorization" not in srv.requests[0]["headers"]


@pytest.mark.parametrize("code", [408, 429, 500, 502, 503, 504])
def test_retryable_status_then_success_takes_two_requests(code):
    with LLMServer(script=[status(code), reply("ok")]) as srv:
        (r,), stats = _ask(_client(srv.url))
    assert (r.text, r.attempts, srv.count, stats.requests, stats.retries) == ("ok", 2, 2, 2, 1)


@pytest.mark.parametrize("code", [400, 404, 409, 422])
def test_client_error_is_never_retried(code):
    with LLMServer(script=[status(code, {"error": "nope"}), reply("ok")]) as srv:
        with pytest.raises(LLMError, match=f"HTTP {code}"):
            _ask(_client(srv.url))
    assert srv.count == 1


def test_permanent_500_takes_one_plus_max_retries_requests():
    with LLMServer(script=[status(500, "boom")]) as srv:
        with pytest.raises(LLMError, match=r"HTTP 500: 'boom' \(gave up after 3 attempts; max_retries=2\)"):
            _ask(_client(srv.url, max_retries=2))
    assert srv.count == 3


@pytest.mark.parametrize("code", [401, 403])
def test_auth_failure_is_one_request_and_a_distinct_error(code, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    with LLMServer(script=[status(code, {"error": f"bad key {CANARY}"})]) as srv:
        with pytest.raises(LLMAuthError) as info:
            _ask(_client(srv.url))
    msg = str(info.value)
    assert (srv.count, CANARY in msg, srv.url in msg, "'m1'" in msg) == (1, False, True, True)


def test_auth_failure_stops_the_batch_at_once():
    with LLMServer(script=[status(401)]) as srv:
        with pytest.raises(LLMAuthError):
            _ask(_client(srv.url, concurrency=2), *[f"q{i}" for i in range(20)])
    assert srv.count <= 2  # only the requests already in flight


def test_unknown_model_404_names_endpoint_and_model():
    with LLMServer(script=[status(404, {"error": "model 'm1' does not exist"})]) as srv:
        with pytest.raises(
            LLMError,
            match=(
                rf"^{srv.url}/chat/completions \(model 'm1'\): "
                r"HTTP 404 \(unknown model or wrong base_url\?\)"
            ),
        ):
            _ask(_client(srv.url))


@pytest.mark.parametrize(
    "body, problem",
    [
        ("<html>proxy error</html>", "the reply is not JSON"),
        ('{"choices": []}', "the reply has no choices"),
        ('{"choices": [{"message": {"content": 3}}]}', "no message with text content"),
    ],
)
def test_malformed_200_reply_is_an_error_without_retry(body, problem):
    with LLMServer(script=[raw(body)]) as srv:
        with pytest.raises(LLMError, match=problem):
            _ask(_client(srv.url))
    assert srv.count == 1


def test_retry_after_is_honoured():
    with LLMServer(script=[status(429, headers={"Retry-After": "0.6"}), reply("ok")]) as srv:
        t0 = time.monotonic()
        _ask(_client(srv.url, backoff_s=0.0))
        elapsed = time.monotonic() - t0
    assert 0.6 <= elapsed < 3 and srv.count == 2


def test_retry_after_beyond_the_deadline_fails_at_once():
    with LLMServer(script=[status(503, headers={"Retry-After": "120"}), reply("ok")]) as srv:
        t0 = time.monotonic()
        with pytest.raises(LLMError, match="would pass the deadline of 10 s"):
            _ask(_client(srv.url))
    assert (srv.count, time.monotonic() - t0 < 3) == (1, True)


def test_retry_after_as_http_date():
    assert retry_after_s("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412500.0) == 10.0


def test_never_answering_server_ends_by_the_deadline():
    with LLMServer(script=[hang()]) as srv:
        t0 = time.monotonic()
        with pytest.raises(LLMError, match=r"no reply within"):
            _ask(_client(srv.url, timeout_s=0.3, deadline_s=1.0, max_retries=100))
        elapsed = time.monotonic() - t0
    assert 0.9 <= elapsed < 1.6 and 3 <= srv.count <= 4  # 0.3 s attempts and short waits until 1 s


def test_unreachable_endpoint_is_retried_then_named():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # bound, not listening: connection refused
        with pytest.raises(
            LLMError,
            match=rf"^{url}/chat/completions \(model 'm1'\): cannot connect: .* \(gave up after 3 attempts",
        ):
            _ask(_client(url, max_retries=2))


def test_concurrency_limit_is_the_most_requests_in_flight():
    with LLMServer(delay_s=0.05) as srv:
        results, _ = _ask(_client(srv.url, concurrency=3), *[f"q{i}" for i in range(12)])
    assert (srv.max_in_flight, [r.text for r in results]) == (3, [f"ECHO q{i}" for i in range(12)])


def test_backoff_doubles_with_seeded_jitter():
    a, b = (_client("http://127.0.0.1:1/v1", backoff_s=1.0) for _ in range(2))
    waits = [a.backoff(n) for n in (1, 2, 3)]
    assert waits == [b.backoff(n) for n in (1, 2, 3)] and all(
        0.5 * 2**i <= w <= 2**i for i, w in enumerate(waits)
    )


def test_second_batch_is_served_from_the_cache(tmp_path):
    with LLMServer() as srv:
        client = _client(srv.url)
        _ask(client, "a", "b", cache=GenCache(tmp_path))
        results, stats = _ask(client, "a", "b", cache=GenCache(tmp_path))
    assert (srv.count, stats.cache_hits, [r.cached for r in results], results[0].text) == (
        2,
        2,
        [True, True],
        "ECHO a",
    )


def test_a_different_model_misses_the_cache(tmp_path):
    with LLMServer() as srv:
        _ask(_client(srv.url), "a", "b", cache=GenCache(tmp_path))
        _, stats = _ask(_client(srv.url, model="m2"), "a", "b", cache=GenCache(tmp_path))
    assert (srv.count, stats.cache_misses) == (4, 2)


def test_a_failed_call_is_not_cached(tmp_path):
    with LLMServer(script=[status(400), reply("ok")]) as srv:
        with pytest.raises(LLMError):
            _ask(_client(srv.url), cache=GenCache(tmp_path))
        (r,), _ = _ask(_client(srv.url), cache=GenCache(tmp_path))
    assert (r.text, r.cached, srv.count) == ("ok", False, 2)


# ------------------------------------------------------------------ calls allowed to fail (max_errors)


def _fail_on_bad(n: int, body: dict):
    return status(400, "bad") if body["messages"][0]["content"].startswith("bad") else reply("ok")


def test_up_to_max_errors_failed_calls_stay_in_their_places():
    with LLMServer(script=_fail_on_bad) as srv:
        results, _ = _client(srv.url).complete_all(
            [[Message(role="user", content=q)] for q in ("a", "bad1", "b")], max_errors=1
        )
    assert ([type(r).__name__ for r in results], results[2].text) == (
        ["ChatResult", "LLMError", "ChatResult"],
        "ok",
    )


def test_one_failed_call_beyond_max_errors_stops_the_batch():
    with LLMServer(script=_fail_on_bad) as srv:
        with pytest.raises(LLMError, match=r"HTTP 400"):
            _client(srv.url, concurrency=1).complete_all(
                [[Message(role="user", content=q)] for q in ("bad1", "bad2")], max_errors=1
            )


def test_an_auth_error_stops_the_batch_whatever_max_errors():
    with LLMServer(script=[status(401)]) as srv:
        with pytest.raises(LLMAuthError):
            _client(srv.url).complete_all([[Message(role="user", content="q")]], max_errors=5)
