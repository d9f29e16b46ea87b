"""The code hash of a component: its module and the modules of its package it imports."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrack.core.registry import code_modules, code_sha256

FILES = {
    "__init__.py": "",
    "comp.py": "from pkgx.helper import double\nfrom . import sibling\nimport json\n\n"
    "class Comp:\n    def run(self):\n        from pkgx import lazy\n        return lazy.VALUE\n",
    "helper.py": "from pkgx.deep import BASE\n\ndef double(x):\n    return 2 * x + BASE\n",
    "deep.py": "BASE = 0\n",
    "sibling.py": "X = 1\n",
    "lazy.py": "VALUE = 3\n",
    "registry_like.py": "def load():\n    from pkgx import unrelated\n",
    "unrelated.py": "Y = 2\n",
}


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package `pkgx` in tmp_path, importable; forgotten afterwards."""
    root = tmp_path / "pkgx"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield root
    for name in [m for m in sys.modules if m == "pkgx" or m.startswith("pkgx.")]:
        del sys.modules[name]
    code_sha256.cache_clear()


def _comp() -> type:
    for name in [m for m in sys.modules if m.startswith("pkgx.")]:
        del sys.modules[name]
    code_sha256.cache_clear()
    return importlib.import_module("pkgx.comp").Comp


def test_modules_are_the_component_its_imports_theirs_and_its_lazy_ones(pkg: Path) -> None:
    assert sorted(code_modules("pkgx.comp")) == [
        "pkgx",
        "pkgx.comp",
        "pkgx.deep",
        "pkgx.helper",
        "pkgx.lazy",
        "pkgx.sibling",
    ]


def test_a_lazy_import_in_another_module_is_not_followed(pkg: Path) -> None:
    # a registry's function that imports every built-in component does not make them dependencies
    (pkg / "helper.py").write_text("from pkgx import registry_like\n\ndef double(x):\n    return 2 * x\n")
    assert "pkgx.unrelated" not in code_modules("pkgx.comp") and "pkgx.registry_like" in code_modules(
        "pkgx.comp"
    )


def test_the_hash_changes_with_a_module_imported_two_levels_down(pkg: Path) -> None:
    before = code_sha256(_comp())
    (pkg / "deep.py").write_text("BASE = 1\n")
    assert code_sha256(_comp()) != before


def test_the_hash_ignores_a_module_the_component_does_not_import(pkg: Path) -> None:
    before = code_sha256(_comp())
    (pkg / "unrelated.py").write_text("Y = 3\n")
    assert code_sha256(_comp()) == before


@pytest.mark.parametrize(
    "edit",
    [
        "from pkgx.deep import BASE\n\n\ndef double(x):  # twice, plus the base\n    return 2*x+BASE\n",
        '"""Helpers."""\nfrom pkgx.deep import BASE\n\ndef double(x):\n    """Twice x, plus the base."""\n   '
        " return 2 * x + BASE\n",
    ],
)
def test_the_hash_ignores_formatting_comments_and_docstrings(pkg: Path, edit: str) -> None:
    before = code_sha256(_comp())
    (pkg / "helper.py").write_text(edit)
    assert code_sha256(_comp()) == before


def test_the_hash_changes_with_a_string_that_is_not_a_docstring(pkg: Path) -> None:
    before = code_sha256(_comp())
    (pkg / "deep.py").write_text('BASE = 0\nNAME = "x"\n')
    assert code_sha256(_comp()) != before


# ------------------------------------------------------------------ lazy built-ins


def _scorer_modules_after(code: str) -> list[str]:
    import ast
    import subprocess

    probe = f"import sys\n{code}\nprint(sorted(m for m in sys.modules if m.startswith('ragtrack.scorers.')))"
    return ast.literal_eval(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    )


def test_building_a_scorer_imports_only_its_module() -> None:
    code = "from ragtrack.scorers import build_scorer; build_scorer('eval_json_v2')"
    assert _scorer_modules_after(code) == ["ragtrack.scorers.base", "ragtrack.scorers.eval_json_v2"]


def test_listing_the_scorers_imports_none() -> None:
    code = "from ragtrack.scorers import scorer_names; assert 'rag' in scorer_names()"
    assert _scorer_modules_after(code) == ["ragtrack.scorers.base"]


def test_an_unknown_scorer_names_every_built_in() -> None:
    from ragtrack.core.errors import InputError
    from ragtrack.scorers import build_scorer

    with pytest.raises(InputError, match="known: earag, eval_json_v2, rag, refusal_citation, rubric_judge"):
        build_scorer("nope")


def test_code_hashes_asked_from_many_threads_at_once_agree() -> None:
    """CPython 3.11's `ast.parse` can fail in concurrent threads (python/cpython#106905): hashes parse one at
    a time."""
    from concurrent.futures import ThreadPoolExecutor

    from ragtrack.core.registry import bytes_code_sha256
    from ragtrack.scorers.rag import RagScorer

    def fresh(_: int) -> str:
        return bytes_code_sha256(RagScorer) + code_sha256.__wrapped__(RagScorer)

    with ThreadPoolExecutor(6) as pool:
        assert len(set(pool.map(fresh, range(12)))) == 1
