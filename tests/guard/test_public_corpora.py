"""The guard on public corpora read at run time (bench/guard_corpora.py; never kept in the
repo): the bench says it skipped what it cannot find, and where the corpora were fetched,
the rules refuse at most 1 % of the held-out ordinary conversation."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

CORPORA = Path(os.environ.get("AIMEMORY_GUARD_CORPORA", "/tmp/data/guard"))
MAX_FALSE_POSITIVE_RATE = 0.01


def bench_args(corpora: Path) -> argparse.Namespace:
    return argparse.Namespace(
        corpora=corpora, memorybank=None, memdaily=None, locomo=None, model_url=None
    )


async def test_the_bench_skips_public_corpora_it_cannot_find(tmp_path, capsys) -> None:
    from bench.guard_public import run_public

    worst = await run_public(bench_args(tmp_path / "absent"), quick=True)

    assert worst is None
    assert "public corpora: skipped, none found under" in capsys.readouterr().out


@pytest.mark.skipif(
    not (CORPORA / "KdConv" / "data").is_dir(),
    reason=f"KdConv not fetched to {CORPORA} (thu-coai/KdConv, see bench/README.md)",
)
def test_the_rules_refuse_at_most_one_percent_of_held_out_chinese_conversation() -> None:
    from bench.guard_corpora import conversation
    from bench.guard_public import rules_refuse

    held_out = [
        item.text for item in conversation(CORPORA, None, None, None) if item.split == "heldout"
    ]

    refused = [line for line in held_out if rules_refuse(line)]

    assert len(refused) <= MAX_FALSE_POSITIVE_RATE * len(held_out), refused[:10]


def test_deepsets_injections_are_skipped_with_a_reason_without_pyarrow(
    tmp_path, capsys, monkeypatch
) -> None:
    import importlib

    from bench.guard_corpora import attacks

    folder = tmp_path / "llm-security-prompt-injection" / "data" / "raw"
    folder.mkdir(parents=True)
    (folder / "train.parquet").write_bytes(b"PAR1")

    def no_pyarrow(name: str, *args, **kwargs):
        raise ImportError(name)

    monkeypatch.setattr(importlib, "import_module", no_pyarrow)

    assert list(attacks(tmp_path)) == []
    assert "skipped, pyarrow is not installed" in capsys.readouterr().out
