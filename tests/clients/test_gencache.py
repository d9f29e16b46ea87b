"""The generation cache: append-only JSONL, tolerant of torn lines, safe for several writing processes."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

from ragtrack.clients.gencache import CACHE_FILE, CacheEntry, GenCache, request_key
from tests.processes import env

ROOT = Path(__file__).resolve().parents[2]


def _entry(key: str, text: str = "answer") -> CacheEntry:
    return CacheEntry(
        key=key, model="m", text=text, usage={"total_tokens": 3}, latency_ms=1.5, finish_reason="stop"
    )


def test_an_answer_is_on_disk_as_soon_as_it_is_put(tmp_path):
    cache = GenCache(tmp_path)
    cache.put(_entry("k1"))
    assert GenCache(tmp_path).get("k1") == _entry("k1")  # read by another reader before close


def _line(entry: CacheEntry) -> str:
    """The line `put` writes for `entry`, without its newline."""
    return entry.line().decode().rstrip("\n")


def test_a_torn_last_line_is_skipped_and_counted(tmp_path):
    good = _line(_entry("k1"))
    (tmp_path / CACHE_FILE).write_text(good + "\n" + good[:30], encoding="utf-8")
    cache = GenCache(tmp_path)
    assert (len(cache), cache.n_skipped) == (1, 1)


def test_a_write_after_a_torn_line_is_kept_whole(tmp_path):
    (tmp_path / CACHE_FILE).write_text('{"key": "k0", "mod', encoding="utf-8")
    GenCache(tmp_path).put(_entry("k1"))
    again = GenCache(tmp_path)
    assert (again.get("k1"), again.n_skipped) == (_entry("k1"), 1)


def test_key_changes_with_each_part_of_the_request():
    base = dict(
        endpoint="http://h/v1/chat/completions",
        model="m",
        messages=[{"role": "user", "content": "q"}],
        params={"temperature": 0},
    )
    variants = [
        dict(base, endpoint="http://h2/v1/chat/completions"),
        dict(base, model="m2"),
        dict(base, messages=[{"role": "user", "content": "q2"}]),
        dict(base, params={"temperature": 0, "seed": 1}),
    ]
    keys = {request_key(**base), *(request_key(**v) for v in variants)}
    assert len(keys) == 5


_WRITER = """
import sys
from ragtrack.clients.gencache import CacheEntry, GenCache
cache = GenCache(sys.argv[1])
for i in range(200):
    text = sys.argv[2] * 20000
    cache.put(CacheEntry(key=f"{sys.argv[2]}-{i}", model="m", text=text, usage={}, latency_ms=0.0))
"""


def test_parallel_writers_never_interleave_lines(tmp_path):
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), name], cwd=ROOT, env=env())
        for name in "abcd"
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    cache = GenCache(tmp_path)  # 20 kB lines: far above the pipe-atomicity size, whole all the same
    assert (len(cache), cache.n_skipped) == (800, 0)


# ------------------------------------------------------------------ verified entries


def test_an_edited_answer_is_not_used(tmp_path):
    record = json.loads(_line(_entry("k1")))
    (tmp_path / CACHE_FILE).write_text(
        json.dumps({**record, "text": "I cannot answer that."}) + "\n", encoding="utf-8"
    )
    cache = GenCache(tmp_path)
    assert (cache.get("k1"), cache.n_unverified) == (None, 1)


def test_an_entry_without_a_checksum_is_not_used(tmp_path):
    (tmp_path / CACHE_FILE).write_text(json.dumps(_entry("k1").model_dump()) + "\n", encoding="utf-8")
    assert GenCache(tmp_path).get("k1") is None


def test_unverified_entries_are_one_warning_line(tmp_path, caplog):
    lines = [json.dumps({**json.loads(_line(_entry(f"k{i}"))), "text": "edited"}) for i in range(3)]
    (tmp_path / CACHE_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ragtrack"):
        GenCache(tmp_path)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "3 answer(s) do not match their checksum" in line


def test_an_answer_asked_again_after_an_edit_is_used(tmp_path):
    record = json.loads(_line(_entry("k1")))
    (tmp_path / CACHE_FILE).write_text(json.dumps({**record, "text": "edited"}) + "\n", encoding="utf-8")
    GenCache(tmp_path).put(_entry("k1"))
    assert GenCache(tmp_path).get("k1") == _entry("k1")
