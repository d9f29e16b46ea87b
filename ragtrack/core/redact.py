"""Masking secrets before anything is written: MLflow params, tags, run names, config copies, logs.

Secrets belong in the environment, but they reach a command line by mistake
(`generator.params.api_key=sk-…`, `'+generator.params={api_key:sk-…}'`,
`api_key=${oc.env:OPENAI_API_KEY}`). Three rules, each enough on its own:

- **by key**: the value of a key that names a credential (`api_key`, `openai_key`, `token`,
  `password`, `secret`, `auth`, …), wherever the key stands, also inside an override's
  dict value;
- **by shape**: `sk-…` keys, `Bearer …`/`Basic …` headers, GitHub/GitLab/Slack/Hugging
  Face/AWS tokens, JWTs, credentials in URLs (`https://user:pass@host`), and long
  high-entropy strings (mixed case and digits, ≥ 24 characters; a path's segments one by one);
- **by value**: the value of every environment variable whose name names a credential.

Data files (eval sets, predictions) are archived byte for byte and never pass through here:
a model's answer is evidence, not configuration.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = ["MASK", "RedactingFilter", "is_secret_key", "redact", "redact_overrides", "redact_text"]

MASK = "***"

_SECRET_KEY = re.compile(
    r"(api[_-]?key|secret|passw(or)?d|passwd|credentials?|private[_-]?key|access[_-]?key|authorization"
    r"|(^|[_\-])(key|token|auth))$",
    re.IGNORECASE,
)  # matched against the end of a key's last part: `max_tokens`, `tokenizer`, `api_key_env` are not secrets
# ragtrack's own parameters whose names match the rule above but which hold no credential.
_NOT_SECRET = frozenset({"refusal_token"})
_SHAPES = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),  # OpenAI-style keys (sk-…, sk-proj-…)
    re.compile(r"\b(?:Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE),  # auth headers
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat|glpat|xox[abprs]|hf)_[A-Za-z0-9_\-]{10,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWTs
]
_URL_CREDENTIALS = re.compile(r"(?<=://)([^/\s:@]+):([^/\s@]+)@")
_MIN_TOKEN = 24  # characters of a run of token characters before it may be judged a secret
_TOKEN_RUN = re.compile(rf"[A-Za-z0-9+/_=\-]{{{_MIN_TOKEN},}}")
_WORD = re.compile(r"[a-z]{2,}")  # a path segment that is a plain word (experiments, demo, tmp)
# Credentials written as pairs in free text: `key=value` (overrides, log lines), `"key": "value"`
# (JSON), and `{key: value, …}` (an override's dict value). A bare `key: value` in prose
# ("missing key: source_map") is not a pair.
_PAIRS = [
    re.compile(r"""(?<![\w.+~/\-])([\w.+~/\-]+)(=)()([^\s,;{}\[\]"']+)"""),
    re.compile(r"""["']([\w.\-]+)["'](\s*:\s*)(["']?)([^\s,;{}\[\]"']+)"""),
    re.compile(r"""(?<=[{,])\s*([\w.\-]+)(\s*:\s*)()([^\s,;{}\[\]"']+)"""),
]
_MIN_ENV_SECRET = 6  # shorter environment values ("1", "true") would mask ordinary text


def is_secret_key(key: str) -> bool:
    """Whether a config/param/override key names a credential (e.g. `api_key`, `openai_key`)."""
    leaf = re.split(r"[./]", key.lstrip("+~"))[-1]
    return leaf not in _NOT_SECRET and bool(_SECRET_KEY.search(leaf))


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())


def _looks_random(token: str) -> bool:
    """Mixed case and digits, and dense: our hashes (lower-case hex) and paths are not."""
    return (
        any(c.isdigit() for c in token)
        and any(c.islower() for c in token)
        and any(c.isupper() for c in token)
        and _entropy(token) >= 3.5
    )


def _env_secrets() -> list[str]:
    # Keys first, then each value: iterating os.environ.items() raises KeyError when another
    # thread removes a variable meanwhile, as MLflow's telemetry thread does.
    values = {
        v
        for k in list(os.environ)
        if is_secret_key(k) and len(v := os.environ.get(k) or "") >= _MIN_ENV_SECRET
    }
    return sorted(values, key=len, reverse=True)  # longest first: a value containing another is masked whole


def redact_text(text: str) -> str:
    """`text` with every secret-shaped substring and every credential from the environment masked."""
    if not text:
        return text
    for secret in _env_secrets():
        text = text.replace(secret, MASK)
    for shape in _SHAPES:
        text = shape.sub(MASK, text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}:{MASK}@", text)
    for pair in _PAIRS:
        text = pair.sub(
            lambda m: (
                m.group(0)[: m.start(4) - m.start(0)] + MASK if is_secret_key(m.group(1)) else m.group(0)
            ),
            text,
        )
    return _TOKEN_RUN.sub(lambda m: _mask_run(m.group(0)), text)


def _mask_run(run: str) -> str:
    """A long run of token characters, masked when it looks random. A path (a `/` and a plain
    lower-case word among its segments: `tmp.VMrmo2jGJ8/experiments/demo`) is judged segment by
    segment, so a randomly named folder (mktemp's) does not mask the path through it."""
    segments = run.split("/")
    if len(segments) > 1 and any(_WORD.fullmatch(seg) for seg in segments):
        return "/".join(MASK if len(seg) >= _MIN_TOKEN and _looks_random(seg) else seg for seg in segments)
    return MASK if _looks_random(run) else run


def redact(value: Any, key: str = "") -> Any:
    """A config value with secrets masked: by key (recursively through dicts and lists) and by text."""
    if key and is_secret_key(key) and value not in (None, "", [], {}):
        return MASK
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def _redact_override(override: str) -> str:
    key, eq, value = override.partition("=")
    if eq and is_secret_key(key):
        return f"{key}={MASK}"  # the whole value, spaces and all
    return redact_text(override)  # also the dict form `+generator.params={api_key:sk-…}`


def redact_overrides(overrides: Iterable[str]) -> list[str]:
    """Hydra override strings with secret values masked (by key, inner key, shape and environment)."""
    return [_redact_override(o) for o in overrides]


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in every record it passes (attach it to handlers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
