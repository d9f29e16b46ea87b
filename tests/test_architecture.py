"""The layers of ragtrack (`ragtrack/__init__.py`): no module imports a package of its own layer or a higher
one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ragtrack"
LAYERS = [
    ("core",),
    ("nlp", "clients"),
    ("inputs",),
    ("index",),
    ("generators",),
    ("scorers",),
    ("analysis",),
    ("run",),
    ("tracking",),
    ("app", "mlflow"),
]
LAYER = {pkg: i for i, pkgs in enumerate(LAYERS) for pkg in pkgs}


def _package(module: str) -> str | None:
    """The subpackage of a `ragtrack.…` module name (None for `ragtrack` itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "ragtrack" else None


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every `ragtrack.…` module a file imports, lazy imports included: (line, module)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("ragtrack.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "ragtrack":  # from ragtrack import core, __version__
                out += [(node.lineno, f"ragtrack.{a.name}") for a in node.names if a.name in LAYER]
            elif node.module.startswith("ragtrack."):
                out.append((node.lineno, node.module))
    return out


def test_every_subpackage_has_a_layer() -> None:
    found = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert found == set(LAYER)


def test_no_module_is_left_at_the_top() -> None:
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py"]


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE.parent))
)
def test_a_module_imports_only_its_own_package_and_lower_layers(path: Path) -> None:
    mine = path.relative_to(PACKAGE).parts[0]
    if mine not in LAYER:
        return  # ragtrack/__init__.py
    wrong = [
        f"line {line}: {module} (layer {LAYER[theirs] + 1}, {mine} is layer {LAYER[mine] + 1})"
        for line, module in _imports(path)
        if (theirs := _package(module)) is not None and theirs != mine and LAYER[theirs] >= LAYER[mine]
    ]
    assert not wrong, f"{path.relative_to(PACKAGE.parent)} imports upward or sideways: " + "; ".join(wrong)


def test_the_check_catches_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from ragtrack.tracking.sink import MlflowSink\n")
    assert [_package(m) for _, m in _imports(module)] == ["tracking"]
