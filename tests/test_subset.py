"""Derived subsets (SPEC §1 reproducibility record): reproducible bit for bit from parent, seed and n."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragtrack.core.errors import InputError
from ragtrack.inputs.eval_sets import load_eval_file, load_eval_set, make_subset, subset_eval_set

RAGTRACK = str(Path(sys.executable).with_name("ragtrack"))

ANSWER_EXAMPLE = {
    "target_audience": "customers",
    "main_topic": "SLA",
    "sub_topic": "uptime",
    "detailed_description": ["99.9% monthly uptime"],
    "original_evidence": "Lumen Cloud guarantees 99.9% monthly uptime for all paid plans.",
    "predicted_questions": ["What credits apply?"],
}
N_ITEMS = 30


def qv2_items(n: int = N_ITEMS, with_ids: bool = True) -> list[dict[str, Any]]:
    items = []
    for i in range(n):
        item: dict[str, Any] = {"id": f"q{i:02d}"} if with_ids else {}
        item.update(question=f"question {i}？", expected={"answer_example": ANSWER_EXAMPLE, "source_map": []})
        items.append(item)
    return items


def write_json(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


@pytest.fixture
def src(tmp_path: Path) -> Path:
    return write_json(tmp_path / "question_v2.json", qv2_items())


def ids_in(data: bytes) -> list[str]:
    return [str(x["id"]) for x in json.loads(data)]


# ---------------------------------------------------------------- make_subset


def test_same_seed_gives_identical_bytes(src: Path) -> None:
    d1, i1 = make_subset(src, 10, seed=7)
    d2, i2 = make_subset(src, 10, seed=7)
    assert d1 == d2
    assert i1 == i2


def test_different_seed_gives_different_ids(src: Path) -> None:
    _, i1 = make_subset(src, 10, seed=1)
    _, i2 = make_subset(src, 10, seed=2)
    assert i1.ids != i2.ids


def test_subset_info_records_parent_seed_n(src: Path) -> None:
    _, info = make_subset(src, 5, seed=3)
    assert info.parent_version == "question_v2@" + hashlib.sha1(src.read_bytes()).hexdigest()
    assert (info.seed, info.n, len(info.ids)) == (3, 5, 5)


def test_subset_keeps_file_order(src: Path) -> None:
    data, info = make_subset(src, 12, seed=11)
    order = [f"q{i:02d}" for i in range(N_ITEMS)]
    assert info.ids == sorted(info.ids, key=order.index)
    assert ids_in(data) == info.ids


def test_subset_items_are_the_parent_items(src: Path) -> None:
    data, _ = make_subset(src, 4, seed=0)
    parent = {x["id"]: x for x in json.loads(src.read_text(encoding="utf-8"))}
    for item in json.loads(data):
        assert item == parent[item["id"]]


def test_subset_of_whole_set_is_allowed(src: Path) -> None:
    _, info = make_subset(src, N_ITEMS, seed=0)
    assert info.ids == [f"q{i:02d}" for i in range(N_ITEMS)]


@pytest.mark.parametrize("n", [N_ITEMS + 1, 0, -1])
def test_bad_n_is_input_error(src: Path, n: int) -> None:
    with pytest.raises(InputError) as ei:
        make_subset(src, n, seed=0)
    assert ei.value.file == str(src)
    assert f"n={n}" in str(ei.value)


def test_missing_ids_are_written_as_original_index(tmp_path: Path) -> None:
    path = write_json(tmp_path / "noids.json", qv2_items(with_ids=False))
    data, info = make_subset(path, 6, seed=5)
    items = json.loads(data)
    assert [x["id"] for x in items] == info.ids
    for item in items:  # the written id is the item's index in the parent
        assert item["question"] == f"question {item['id']}？"


def test_reloaded_subset_has_the_recorded_ids(tmp_path: Path) -> None:
    path = write_json(tmp_path / "noids.json", qv2_items(with_ids=False))
    data, info = make_subset(path, 6, seed=5)
    out = tmp_path / "noids_dev6.json"
    out.write_bytes(data)
    assert [c.id for c in load_eval_file(out).cases] == info.ids


def test_null_ids_are_written_as_original_index(tmp_path: Path) -> None:
    items = qv2_items(3, with_ids=False)
    for item in items:
        item["id"] = None
    path = write_json(tmp_path / "nullids.json", items)
    data, info = make_subset(path, 1, seed=0)
    written = json.loads(data)
    assert [x["id"] for x in written] == info.ids
    out = tmp_path / "nullids_dev1.json"
    out.write_bytes(data)
    assert [c.id for c in load_eval_file(out).cases] == info.ids


def test_jsonl_subset_is_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "rag.jsonl"
    path.write_text(
        "".join(json.dumps({"id": i, "question": f"Q{i}"}) + "\n" for i in range(10)), encoding="utf-8"
    )
    data, info = make_subset(path, 3, seed=1)
    lines = data.decode("utf-8").splitlines()
    assert [str(json.loads(line)["id"]) for line in lines] == info.ids


# ---------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def cli_subset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One `ragtrack subset` call: src, out, manifest and the process result."""
    d = tmp_path_factory.mktemp("subset_cli")
    src = write_json(d / "question_v2.json", qv2_items(with_ids=False))
    out = d / "question_v2_dev8.json"
    proc = subprocess.run(
        [RAGTRACK, "subset", "--src", str(src), "--n", "8", "--seed", "42", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    manifest_path = d / "question_v2_dev8.manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else None
    return {"src": src, "out": out, "proc": proc, "manifest": manifest}


def test_cli_subset_exits_0_and_writes_both_files(cli_subset: dict[str, Any]) -> None:
    assert cli_subset["proc"].returncode == 0, cli_subset["proc"].stderr
    assert cli_subset["out"].is_file()
    assert cli_subset["manifest"] is not None


def test_cli_manifest_parent_version_is_source_version(cli_subset: dict[str, Any]) -> None:
    assert cli_subset["manifest"]["parent_version"] == load_eval_file(cli_subset["src"]).file.version


def test_cli_manifest_version_is_out_stem_at_sha1(cli_subset: dict[str, Any]) -> None:
    out: Path = cli_subset["out"]
    assert cli_subset["manifest"]["version"] == f"{out.stem}@{hashlib.sha1(out.read_bytes()).hexdigest()}"


def test_cli_manifest_records_seed_n_ids(cli_subset: dict[str, Any]) -> None:
    m = cli_subset["manifest"]
    assert (m["seed"], m["n"]) == (42, 8)
    assert m["ids"] == ids_in(cli_subset["out"].read_bytes())


def test_cli_output_equals_make_subset(cli_subset: dict[str, Any]) -> None:
    data, info = make_subset(cli_subset["src"], 8, 42)
    assert cli_subset["out"].read_bytes() == data
    assert cli_subset["manifest"]["ids"] == info.ids


def test_subset_eval_set_matches_cli_ids_and_version(cli_subset: dict[str, Any]) -> None:
    es, loaded = load_eval_set([cli_subset["src"]])
    dev = subset_eval_set(es, loaded, 8, 42)
    m = cli_subset["manifest"]
    assert [c.id for c in dev.cases] == m["ids"]
    assert dev.version == m["version"]
    assert dev.subset is not None
    assert (dev.subset.parent_version, dev.subset.seed, dev.subset.ids) == (m["parent_version"], 42, m["ids"])
