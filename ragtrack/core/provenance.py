"""Where the code that produced a run came from: git commit and dirty flag."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git_state"]


def git_state(directory: str | Path = ".") -> tuple[str, bool]:
    """`(commit, dirty)` of the git work tree holding `directory`; `("unknown", False)` outside git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=directory, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return "unknown", False
    return commit, dirty
