"""What a real model does with the plugin's prompts and tools (issue #36), end to end through
NoneBot, every request through a recording proxy that validates it as real providers do.
Scenarios (`--scenarios`, default all): remember (members' facts asked back before and after
a restart and in private, beside the window-only twin), saves, answers, locomo and cost; the
targets are in bench/README.md. Every addressed turn is written as a JSON line to
`--transcripts DIR` (else the scratch directory) as the run goes. A model evaluating ~35
prompt tokens/s takes about 15 minutes for --quick --locomo-questions 3, hours in full.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from bench import harness as h
from bench.real_model_locomo import LocomoRun, run_locomo
from bench.real_model_proxy import Upstream
from bench.real_model_remember import remember_run, start_time_for
from bench.real_model_report import (
    Targets,
    print_cost,
    print_header,
    print_locomo,
    print_remember_tables,
    print_targets,
)
from bench.real_model_script import FULL_SIZES, QUICK_SIZES, build_script

SCENARIOS = ("remember", "saves", "answers", "locomo", "cost")
LOCOMO_QUESTIONS, QUICK_LOCOMO_QUESTIONS = 20, 8


def scenario_list(text: str) -> frozenset[str]:
    """`--scenarios remember,saves`: known names only."""
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    if unknown := names - set(SCENARIOS):
        raise argparse.ArgumentTypeError(
            f"unknown scenarios {sorted(unknown)}; pick from {SCENARIOS}"
        )
    return names


def options(parser: argparse.ArgumentParser) -> None:
    """The bench's command line (the names are a contract, see issue #36)."""
    parser.add_argument("--model-url", required=True, help="OpenAI-compatible base URL (…/v1)")
    parser.add_argument("--model", required=True, help="the model every role uses")
    parser.add_argument("--budget", type=int, default=3000, help="context budget in tokens")
    parser.add_argument("--seed", type=int, default=20260501, help="draws the chat")
    parser.add_argument("--scenarios", type=scenario_list, default=frozenset(SCENARIOS))
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo10.json")
    parser.add_argument("--locomo-questions", type=int, help="default 20, 8 with --quick")
    parser.add_argument("--locomo-conversation", type=int, default=0)
    parser.add_argument("--transcripts", type=Path, help="where to write the turns as JSON lines")


async def run(bench: h.Bench) -> None:
    """Run the chosen scenarios, print a table each, then the targets."""
    args, wanted = bench.args, bench.args.scenarios
    upstream = Upstream(args.model_url.rstrip("/"), args.model)
    print_header(upstream, args)
    transcripts: Path = args.transcripts or bench.work_dir / "transcripts"
    for name in ("remember", "locomo"):
        (transcripts / f"{name}.jsonl").unlink(missing_ok=True)
    ours = baseline = script = locomo = None
    if wanted - {"locomo"}:
        script = build_script(random.Random(args.seed), QUICK_SIZES if bench.quick else FULL_SIZES)
        runs = [False, True] if wanted & {"remember", "cost"} else [False]
        done = [
            await remember_run(
                bench,
                script,
                upstream,
                window_only=window_only,
                budget_tokens=args.budget,
                start_time=start_time_for(script),
                seed=args.seed,
                transcript=transcripts / "remember.jsonl",
            )
            for window_only in runs
        ]
        ours, baseline = done[0], done[1] if len(done) > 1 else None
        print_remember_tables(wanted, upstream, script, ours, baseline)
    if "locomo" in wanted:
        locomo = await locomo_scenario(bench, upstream, transcripts)
    if "cost" in wanted:
        print_cost(upstream, ours, baseline, locomo)
    targets = Targets(upstream.model, bench.quick)
    print_targets(targets, wanted, script, ours, baseline, locomo)


async def locomo_scenario(
    bench: h.Bench, upstream: Upstream, transcripts: Path
) -> LocomoRun | None:
    """Run and print LoCoMo, or say why not."""
    args = bench.args
    print("\nlocomo — answers from long conversations")
    if args.locomo is None:
        print("skipped: no --locomo PATH/locomo10.json given")
        return None
    count = args.locomo_questions or (QUICK_LOCOMO_QUESTIONS if bench.quick else LOCOMO_QUESTIONS)
    result = await run_locomo(
        bench,
        args.locomo,
        args.locomo_conversation,
        count,
        upstream,
        args.budget,
        transcripts / "locomo.jsonl",
    )
    print_locomo(upstream, result, args.budget)
    return result


if __name__ == "__main__":
    h.main(__doc__, run, options)
