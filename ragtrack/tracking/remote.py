"""A store reached over the network: fail fast when it cannot be used, outlast a restart when it can.

MLflow's HTTP client retries every failed call 7 times over about 4 minutes (connection
errors and 408/429/5xx answers alike): a tracking URI that does not answer costs a command
4 minutes and a screen of `Retrying …` lines, and then a traceback-sized message. So:

- `check_store` probes a store once when a command connects, with a short budget of its
  own (3 attempts within ~3 s, 10 s timeout each). A server that does not answer, refused
  credentials, a server that cannot reach its database, an artifact bucket that does not
  exist, a database that refuses the connection: each is one line naming the URI (its
  password masked), raised as `InputError` (exit 2) before any run exists.
- `use_restart_budget` gives every later call a budget that outlasts a restart of the
  tracking server (`RETRY_ENV`: 5 retries, backoff doubling from 4 s, ~60 s in all), unless
  the user set MLflow's variables (the timeout of one call stays MLflow's 120 s: uploads of
  large artifacts through the server take time). MLflow's retried writes are safe: metrics and params are
  deduplicated by the server, artifacts are overwritten.

Credentials come only from the environment (`MLFLOW_TRACKING_USERNAME`/`PASSWORD`, read by
MLflow): a tracking URL with a user or password in it is refused.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from ragtrack.core.errors import InputError
from ragtrack.core.redact import redact_text

__all__ = ["RETRY_ENV", "check_store", "is_http", "summary", "use_restart_budget"]

RETRY_ENV = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "5",  # sleeps 0, 4, 8, 16, 32 s (+ up to 1 s jitter each): ~60 s
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "2",
}
PROBE_RETRIES = 2  # the probe's own budget: 3 attempts, sleeps 0 and 2 s
PROBE_BACKOFF = 1
PROBE_TIMEOUT_S = 10
_SEARCH = "/api/2.0/mlflow/experiments/search"
_ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts"
# How MLflow's wrapped requests errors say that nothing answered: a socket error, or a timeout.
_REASON = re.compile(
    r"\[Errno -?\d+\] ([^'\")\]]+)|((?:Read )?timed out|Connection aborted|RemoteDisconnected)"
)


def is_http(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def use_restart_budget() -> None:
    """MLflow's retry settings for HTTP calls, where the user has not set them (inherited by workers)."""
    for key, value in RETRY_ENV.items():
        os.environ.setdefault(key, value)


def _where(uri: str) -> str:
    return f"tracking URI {redact_text(uri)}"


def check_store(uri: str) -> None:
    """Raise `InputError` (one line, naming `uri`) unless the store answers and accepts us.

    Runs before MLflow builds its client store, whose database engine retries a refused
    connection for about 100 s with a warning per attempt.
    """
    if uri.startswith("sqlite:"):
        return  # a local file, opened (and created) by `store.open_client`
    if is_http(uri):
        _check_server(uri)
    elif "://" in uri:
        _check_database(uri)


def _check_database(uri: str) -> None:
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    try:
        url = sqlalchemy.engine.make_url(uri)
        timeout = (
            {"connect_timeout": PROBE_TIMEOUT_S} if url.get_backend_name() in ("postgresql", "mysql") else {}
        )
        engine = sqlalchemy.create_engine(url, poolclass=NullPool, connect_args=timeout)
        try:
            with engine.connect():
                pass
        finally:
            engine.dispose()
    except ImportError as e:
        raise InputError(
            _where(uri),
            f"its database driver is not installed ({e}); for PostgreSQL: pip install 'ragtrack[server]'",
        ) from None
    except Exception as e:  # any driver or SQLAlchemy error: the database cannot be used
        raise InputError(_where(uri), f"cannot connect to the database: {_first_line(e)}") from None


def _unanswered(e: BaseException) -> str | None:
    """Why nothing answered (`Connection refused`, `Read timed out`…), when `e` says so."""
    m = _REASON.search(str(e))
    return (m.group(1) or m.group(2)).strip() if m else None


def summary(e: BaseException) -> str:
    """One line for an error of a call to the store: a connection failure as its reason, not MLflow's
    paragraph."""
    reason = _unanswered(e)
    return (
        f"the tracking server does not answer ({reason})"
        if reason
        else f"{type(e).__name__}: {_first_line(e)}"
    )


def _first_line(e: BaseException | str) -> str:
    text = str(e).strip()
    return redact_text(text.splitlines()[0] if text else type(e).__name__)


def _check_server(uri: str) -> None:
    parts = urlsplit(uri)
    if parts.username or parts.password:
        raise InputError(
            _where(uri),
            "credentials in the URI are not accepted: set MLFLOW_TRACKING_USERNAME and "
            "MLFLOW_TRACKING_PASSWORD instead",
        )
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    creds = get_default_host_creds(uri)

    def get(endpoint: str, retries: int, **params: object):  # noqa: ANN202 - a requests.Response
        try:
            return http_request(
                creds,
                endpoint,
                "GET",
                params=params,
                max_retries=retries,
                backoff_factor=PROBE_BACKOFF,
                timeout=PROBE_TIMEOUT_S,
                raise_on_status=False,
            )
        except Exception as e:  # MLflow wraps connection errors and timeouts in MlflowException
            reason = _unanswered(e) or _first_line(e)
            raise InputError(
                _where(uri), f"the tracking server does not answer ({reason}; {retries + 1} attempts)"
            ) from None

    with _quiet_retries():
        r = get(_SEARCH, PROBE_RETRIES, max_results=1)
    if r.status_code == 401:
        user = os.environ.get("MLFLOW_TRACKING_USERNAME")
        problem = (
            f"the tracking server refused the credentials of user {user!r} (MLFLOW_TRACKING_USERNAME/"
            "MLFLOW_TRACKING_PASSWORD)"
            if user
            else (
                "the tracking server requires credentials: "
                "set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"
            )
        )
        raise InputError(_where(uri), problem)
    if r.status_code != 200:
        raise InputError(
            _where(uri), f"the tracking server answered HTTP {r.status_code}: {_message(r.text)}"
        )
    # The artifact proxy (`--serve-artifacts`): a missing bucket or prefix it cannot list shows here.
    # 503 means the server does not proxy artifacts (clients write to the store themselves).
    with _quiet_retries():
        r = get(_ARTIFACTS, 0)
    if r.status_code not in (200, 503):
        raise InputError(
            _where(uri), f"the server's artifact store fails (HTTP {r.status_code}): {_message(r.text)}"
        )


@contextmanager
def _quiet_retries() -> Iterator[None]:
    """Without urllib3's `Retrying (…)` warning per attempt: the probe's verdict is one line of its own."""
    logger = logging.getLogger("urllib3.connectionpool")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _message(body: str) -> str:
    """The `message` of an MLflow error body (else the body), first line only."""
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    text = doc.get("message", body) if isinstance(doc, dict) else body
    return _first_line(str(text)[:500]) or "(empty answer)"
