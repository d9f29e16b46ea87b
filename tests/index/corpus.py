"""A tiny bilingual corpus (two Chinese and two English policy files) and index configs over it."""

from __future__ import annotations

from pathlib import Path

from ragtrack.inputs.config import IndexConfig

DOCS = {
    "zh/refund.md": "# 退款\n\n退款审核通过后，款项将在 5 个工作日内原路退回。\n\n"
    "域名注册费和 SSL 证书不支持退款。\n",
    "zh/security.md": "# 账户安全\n\n账户密码长度不得少于 12 位，密码每 90 天至少更换一次。\n\n"
    "连续 5 次输入错误密码后，账户将被锁定 30 分钟。\n",
    "en/sla.md": "# SLA\n\nLumen Compute instances are guaranteed 99.95% monthly uptime.\n\n"
    "Credit claims must be submitted within 30 days after the end of the affected month.\n",
    "en/travel.md": "# Travel\n\nEmployees must book economy class for all domestic flights.\n\n"
    "Hotel costs in first-tier cities are capped at 650 yuan per night.\n",
}


def write_corpus(folder: Path) -> Path:
    for rel, text in DOCS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


def index_config(
    folder: Path,
    *,
    name: str = "tiny",
    glob: str = "**/*.md",
    model: str = "all-MiniLM-L6-v2",
    batch_size: int = 64,
    **chunker: object,
) -> IndexConfig:
    """An index of `folder` with a 100-character paragraph chunker unless `chunker` says otherwise."""
    return IndexConfig.model_validate(
        {
            "name": name,
            "corpus": {"dir": str(folder), "glob": glob},
            "chunker": {"size": 100, "overlap": 0, "boundary": "paragraph", **chunker},
            "embedder": {"model": model, "batch_size": batch_size},
        }
    )
