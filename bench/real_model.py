"""What a real model does with the plugin's prompts and tools (issue #36), end to end through
NoneBot, every model request passing a recording proxy that validates it as real providers
do (tests/fakes/openai_server.py) and forwards it to the given OpenAI-compatible server.

Scenarios (`--scenarios`, default all):
- remember: three members state 10 facts (3 --quick, N --facts N; half asked to be
  remembered) among small talk, steering attempts and chat among themselves, at a small
  budget, the reviewer running; then ask for them back, after a restart, and in private
  (background calls awaited before each round); beside the window-only twin
  (bench/real_model_plugin.py), asked in the group only.
- saves: what that run saved: "记住" facts kept and about whom, per 100 chit-chat turns,
  steering saved, prompt examples copied, folded facts kept in the summary or memory.
- answers: how its addressed turns ended (reply, JSON, memory lines, notices, stock
  replies) and their tool calls (rounds, invented, repeated, written as text, refused).
- locomo: LoCoMo's F1 against the last lines that fit (bench/real_model_locomo.py).
- cost: prompt, completion and cached tokens per addressed turn by role; seconds per turn.
- planted (issue #38): answers obeying steering notes planted in memory
  (bench/real_model_planted.py). Target: none.
Targets: bench/README.md. Every addressed turn is a JSON line in `--transcripts DIR` (else the
scratch directory). Qwen2.5-Coder-1.5B on llama.cpp's CPU server takes about 15 minutes for
--quick --locomo-questions 3, and hours for the full run.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from bench import harness as h
from bench import real_model_report as report
from bench.real_model_locomo import LocomoRun, run_locomo
from bench.real_model_planted import planted_run, print_planted
from bench.real_model_plugin import Models
from bench.real_model_proxy import Upstream
from bench.real_model_remember import remember_run
from bench.real_model_scores import answers_of, saves_of
from bench.real_model_script import FULL_SIZES, QUICK_SIZES, build_script, sizes_for

SCENARIOS = ("remember", "saves", "answers", "locomo", "cost", "planted")
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
    parser.add_argument("--model", required=True, help="the model every role uses by default")
    parser.add_argument("--compressor-url", help="the compressor's and extractor's base URL")
    parser.add_argument("--compressor-model", help="the compressor's and extractor's model")
    parser.add_argument("--reviewer-url", help="the memory reviewer's base URL")
    parser.add_argument("--reviewer-model", help="the memory reviewer's model")
    parser.add_argument("--budget", type=int, default=3000, help="context budget in tokens")
    parser.add_argument("--seed", type=int, default=20260501, help="draws the chat")
    parser.add_argument("--facts", type=int, help="facts in the chat, default 10 (3 --quick)")
    parser.add_argument("--scenarios", type=scenario_list, default=frozenset(SCENARIOS))
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo10.json")
    parser.add_argument("--locomo-questions", type=int, help="default 20, 8 with --quick")
    parser.add_argument("--locomo-conversation", type=int, default=0)
    parser.add_argument("--transcripts", type=Path, help="where to write the turns as JSON lines")


def models_of(args: argparse.Namespace) -> Models:
    """Each role's upstream: the main model's unless its own flags say otherwise."""
    main = Upstream(args.model_url.rstrip("/"), args.model)

    def role(url: str | None, model: str | None) -> Upstream:
        return Upstream((url or main.url).rstrip("/"), model or main.model)

    compressor = role(args.compressor_url, args.compressor_model)
    return Models(main, compressor, role(args.reviewer_url, args.reviewer_model))


async def run(bench: h.Bench) -> None:
    """Run the chosen scenarios, print a table each, then the targets."""
    args, wanted = bench.args, bench.args.scenarios
    models = models_of(args)
    report.print_header(models, args)
    transcripts: Path = args.transcripts or bench.work_dir / "transcripts"
    for name in ("remember", "locomo", "planted"):
        (transcripts / f"{name}.jsonl").unlink(missing_ok=True)
    ours = baseline = script = locomo = planted = None
    if wanted - {"locomo", "planted"}:
        sizes = sizes_for(args.facts) if args.facts else QUICK_SIZES if bench.quick else FULL_SIZES
        script = build_script(random.Random(args.seed), sizes)
        runs = [False, True] if wanted & {"remember", "cost"} else [False]
        path = transcripts / "remember.jsonl"
        done = [await remember_run(bench, script, models, w, path) for w in runs]
        ours, baseline = done[0], done[1] if len(done) > 1 else None
        if "remember" in wanted:
            report.print_remember(models, script, ours, baseline)
        if "saves" in wanted:
            report.print_saves(models, saves_of(ours, script))
        if "answers" in wanted:
            report.print_answers(models, answers_of(ours.turns, len(ours.rejected)))
    if "locomo" in wanted:
        locomo = await locomo_scenario(bench, args, models, transcripts)
    if "cost" in wanted:
        report.print_cost(models, ours, baseline, locomo)
    if "planted" in wanted:
        planted = await planted_run(bench, models, transcripts / "planted.jsonl")
        print_planted(models, planted)
    targets = report.Targets(models.main.model, bench.quick)
    report.print_targets(targets, wanted, script, ours, baseline, locomo)
    if planted is not None:
        label = f"{planted.steered_answers} of {len(planted.replies)} answers obeyed planted notes"
        targets.check(label, planted.steered_answers == 0)


async def locomo_scenario(
    bench: h.Bench, args: argparse.Namespace, models: Models, transcripts: Path
) -> LocomoRun | None:
    """Run and print LoCoMo, or say why not."""
    print("\nlocomo — answers from long conversations")
    if args.locomo is None:
        print("skipped: no --locomo PATH/locomo10.json given")
        return None
    count = args.locomo_questions or (QUICK_LOCOMO_QUESTIONS if bench.quick else LOCOMO_QUESTIONS)
    result = await run_locomo(bench, count, models, transcripts / "locomo.jsonl")
    report.print_locomo(models, result, args.budget)
    return result


if __name__ == "__main__":
    h.main(__doc__, run, options)
