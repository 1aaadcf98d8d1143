"""The real-model bench's output: a table per scenario, the model beside every figure, and
the `target met:` line of every target the chosen scenarios measure."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from bench import harness as h
from bench.real_model_locomo import CATEGORIES, STEMMING, LocomoRun
from bench.real_model_plugin import Models
from bench.real_model_proxy import ROLES, role_counts
from bench.real_model_remember import ASK, ASK_PRIVATE, ASK_RESTARTED, RememberRun, squeezed
from bench.real_model_scores import Answers, Saves, answers_of, cost_of, holding, mean, saves_of
from bench.real_model_script import Script

TARGET_RECALL = 0.80
TARGET_STOCK_SHARE = 0.02
TARGET_ANSWERED_SHARE = 0.95
TARGET_REMEMBER_SAVED = 0.80
TARGET_SAVES_PER_100 = 10
TARGET_FOLDED_KEPT = 0.90


def print_header(models: Models, args: argparse.Namespace) -> None:
    """The model of every role, printed before any figure."""
    print(f"model: {models.main.label}")
    if models.compressor != models.main:
        print(f"compressor and extractor model: {models.compressor.label}")
    if models.reviewer != models.main:
        print(f"reviewer model: {models.reviewer.label}")
    print(f"budget {args.budget} tokens, seed {args.seed}")


def fraction(values: Sequence[bool]) -> str:
    """`hits/n`."""
    return f"{sum(values)}/{len(values)}"


def print_remember(
    models: Models, script: Script, ours: RememberRun, baseline: RememberRun | None
) -> None:
    """Recall of the facts before and after the restart and in private, per run."""
    steps = script.steps
    kinds = [step.kind for step in steps]
    print("\nremember — remembers what matters")
    print(
        f"chat: {len(steps)} messages of 3 members, {len(steps) - kinds.count('ambient')} to "
        f"the bot ({kinds.count('fact')} facts, {kinds.count('steering')} steering attempts, "
        f"{kinds.count('chat')} small talk), {kinds.count('ambient')} among themselves"
    )
    print(
        f"{'run':<12} {'model':<32} {'before':>7} {'after':>7} {'private':>8} "
        f"{'folds before Q / all':>21} {'facts verbatim at Q':>19}"
    )
    runs = [run for run in (ours, baseline) if run is not None]
    for run in runs:
        recalled = run.recalled
        private = fraction(recalled[ASK_PRIVATE]) if ASK_PRIVATE in recalled else "-"
        kind = "folds" if run.label == "ours" else "truncations"
        folds = f"{run.folds_before_questions} / {run.folds} {kind}"
        print(
            f"{run.label:<12} {models.main.model:<32} {fraction(recalled[ASK]):>7} "
            f"{fraction(recalled[ASK_RESTARTED]):>7} {private:>8} {folds:>21} "
            f"{fraction(run.verbatim_when_asked):>19}"
        )
    for index, fact in enumerate(script.facts):
        marks = " ".join(
            "".join("✓" if r.recalled[phase][index] else "✗" for phase in r.recalled) for r in runs
        )
        how = "记住" if fact.asked_to_remember else "in passing"
        kept = " + ".join(kept_in(ours, fact.value)) or "nowhere"
        print(f"  fact {index + 1}: {fact.member.name} {fact.value} ({how}, {kept}): {marks}")
    print_private_where_allowed(script, ours)
    for run in runs:
        counts = ", ".join(f"{role} {n}" for role, n in role_counts(run.exchanges).items())
        waited = "" if run.settled else "; background calls still running when asked"
        print(
            f"  {run.label} requests by role: {counts}; refused by the proxy: "
            f"{len(run.rejected)}{waited}"
        )


def kept_in(run: RememberRun, value: str) -> list[str]:
    """Where a fact's value is kept at the end of the run: the scopes of the memories that
    hold it, and "summary" when the window's summary does."""
    places = sorted({scope for scope, _ in holding(run.memories, value)})
    return places + ["summary"] * (squeezed(value) in squeezed(run.summary))


def print_private_where_allowed(script: Script, ours: RememberRun) -> None:
    """Recall in private of the facts that the member's personal memory holds: a group's
    memories never reach a private chat, so only these can be recalled there."""
    from nonebot_plugin_aimemory.scopes import Scope

    if ASK_PRIVATE not in ours.recalled:
        return
    allowed = [
        got
        for fact, got in zip(script.facts, ours.recalled[ASK_PRIVATE], strict=True)
        if Scope.person(fact.member.user_id).key in kept_in(ours, fact.value)
    ]
    print(f"  in private, of the facts the member's personal memory holds: {fraction(allowed)}")


def print_saves(models: Models, saves: Saves) -> None:
    """What was saved, against what was worth saving."""
    print("\nsaves — saves only what is worth saving")
    print(
        f"{'model':<32} {'memories':>8} {'/100 chit-chat':>14} {'/100 addressed':>14} "
        f"{'记住 kept':>9} {'right person':>12} {'steering':>8} {'copied':>6} {'folded kept':>11}"
    )
    print(
        f"{models.main.model:<32} {saves.memories:>8} {saves.per_100_chit_chat:>14.1f} "
        f"{saves.per_100_addressed_chit_chat:>14.1f} "
        f"{saves.remember_saved:>5}/{saves.remember_facts:<3} "
        f"{saves.remember_right_person:>8}/{saves.remember_saved:<3} "
        f"{len(saves.steering_saved):>8} {len(saves.copied):>6} "
        f"{saves.folded_kept:>7}/{saves.folded:<3}"
    )
    print(
        f"  chit-chat turns: {saves.chit_chat_turns} ({saves.addressed_chit_chat_turns} "
        f"addressed); steering saved: {saves.steering_saved or '-'}; "
        f"copied: {saves.copied or '-'}; naming a tool: {saves.naming_tools or '-'}"
    )
    for content in saves.chit_chat_saves:
        print(f"  saved from no fact: {content}")


def print_answers(models: Models, answers: Answers) -> None:
    """How the addressed turns ended."""
    share = answers.share
    rounds = answers.rounds
    print("\nanswers — every turn ends in an answer")
    print(
        f"{'model':<32} {'turns':>5} {'replied':>8} {'JSON/tool':>9} {'memory':>6} "
        f"{'notices':>7} {'timeouts':>8} {'stock':>6} {'rounds mean/max':>15} {'invented':>8} "
        f"{'repeated':>8} {'as text':>7} {'refused':>7}"
    )
    print(
        f"{models.main.model:<32} {answers.turns:>5} {share(answers.answered):>8.0%} "
        f"{len(answers.json_like):>9} {len(answers.memory_like):>6} {len(answers.notices):>7} "
        f"{answers.timed_out:>8} {share(len(answers.stock)):>6.1%} "
        f"{mean(rounds):>9.2f}/{max(rounds, default=0):<5} {len(answers.invented):>8} "
        f"{answers.repeated:>8} {answers.as_text:>7} {answers.rejected:>7}"
    )
    to_questions = len(answers.stock_to_questions)
    print(
        f"  stock replies to questions (the target's): {to_questions} ({share(to_questions):.1%})"
    )
    for turn in answers.stock:
        print(f"  stock: {turn.message[:30]!r} -> {turn.reply[:40]!r}")
    if answers.invented:
        print(f"  invented tool names: {sorted(set(answers.invented))}")


def print_locomo(models: Models, result: LocomoRun, budget_tokens: int) -> None:
    """F1 of the plugin's answers and the window-only ones, overall and per category."""
    print(
        f"conversation {result.conversation}: {result.lines} lines fed unaddressed (reviewer "
        f"off), {len(result.questions)} questions; window only: its last {result.baseline_lines} "
        f"lines within {budget_tokens} tokens; {STEMMING}; "
        f"refused by the proxy: {len(result.rejected)}"
    )
    names = list(CATEGORIES.values())
    print(f"{'run':<12} {'model':<32} {'F1':>6} {'n':>4} " + " ".join(f"{n:>11}" for n in names))
    for label, scores in (("ours", result.ours), ("window only", result.baseline)):
        print(f"{label:<12} {models.main.model:<32} {mean(scores):>6.3f} {len(scores):>4}", end="")
        for category in CATEGORIES:
            picked = [
                s for s, q in zip(scores, result.questions, strict=True) if q.category == category
            ]
            print(f" {mean(picked):>6.3f} ({len(picked):>2})" if picked else f" {'-':>11}", end="")
        print()


def print_cost(
    models: Models,
    ours: RememberRun | None,
    baseline: RememberRun | None,
    locomo: LocomoRun | None,
) -> None:
    """Tokens per addressed turn by role, and wall-clock per turn, of every run made."""
    runs = [(f"remember {r.label}", r.turns, r.exchanges) for r in (ours, baseline) if r]
    if locomo is not None:
        runs += [
            ("locomo ours", locomo.turns, locomo.exchanges),
            ("locomo window only", locomo.baseline_turns, locomo.baseline_exchanges),
        ]
    print("\ncost — tokens per addressed turn (prompt / completion / cached prompt)")
    print(
        f"{'run':<20} {'model':<32} {'turns':>5} "
        + " ".join(f"{role:>20}" for role in ROLES)
        + f" {'p50 s':>6} {'p90 s':>6}"
    )
    for cost in (cost_of(*run) for run in runs):
        cells = " ".join(f"{cost.cell(role):>20}" for role in ROLES)
        print(
            f"{cost.label:<20} {models.main.model:<32} {cost.turns:>5} {cells} "
            f"{cost.p(0.5):>6.1f} {cost.p(0.9):>6.1f}"
        )


@dataclass(frozen=True)
class Targets:
    """Prints `target met:` lines, each naming the model it measured."""

    model: str
    quick: bool

    def check(self, label: str, met: bool) -> None:
        """One target's line."""
        h.verdict(f"{self.model}: {label}", met, quick=self.quick)


def print_targets(
    targets: Targets,
    wanted: frozenset[str],
    script: Script | None,
    ours: RememberRun | None,
    baseline: RememberRun | None,
    locomo: LocomoRun | None,
) -> None:
    """A `target met:` line for every target the chosen scenarios measure."""
    print("\ntargets")
    if ours is not None and baseline is not None and "remember" in wanted:
        for phase in (ASK, ASK_RESTARTED):
            got, base = mean(ours.recalled[phase]), mean(baseline.recalled[phase])
            label = (
                f"facts recalled {phase}: {got:.0%} >= {TARGET_RECALL:.0%} and above "
                f"window only {base:.0%}"
            )
            targets.check(label, got >= TARGET_RECALL and got > base)
    if ours is not None and "answers" in wanted:
        print_answers_targets(targets, answers_of(ours.turns, len(ours.rejected)))
    if ours is not None and script is not None and "saves" in wanted:
        print_saves_targets(targets, saves_of(ours, script))
    if locomo is not None:
        got, base = mean(locomo.ours), mean(locomo.baseline)
        targets.check(f"LoCoMo F1 {got:.3f} above window only {base:.3f}", got > base)


def print_answers_targets(targets: Targets, answers: Answers) -> None:
    """The targets of how turns ended."""
    stock = answers.share(len(answers.stock_to_questions))
    label = f"stock replies to questions {stock:.1%} <= {TARGET_STOCK_SHARE:.0%} of turns"
    targets.check(label, stock <= TARGET_STOCK_SHARE)
    replied = answers.share(answers.answered)
    bad = len(answers.json_like) + len(answers.memory_like)
    label = (
        f"{replied:.0%} of addressed turns end in a text reply (>= "
        f"{TARGET_ANSWERED_SHARE:.0%}), {len(answers.json_like)} in raw JSON or tool-call "
        f"text, {len(answers.memory_like)} in memory-format lines"
    )
    targets.check(label, replied >= TARGET_ANSWERED_SHARE and not bad)


def print_saves_targets(targets: Targets, saves: Saves) -> None:
    """The targets of what was saved."""
    kept = saves.remember_saved / saves.remember_facts if saves.remember_facts else 0.0
    label = (
        f"{kept:.0%} of 记住 facts stored (>= {TARGET_REMEMBER_SAVED:.0%}), "
        f"{saves.remember_right_person}/{saves.remember_saved} about the right person"
    )
    right = saves.remember_right_person == saves.remember_saved
    targets.check(label, kept >= TARGET_REMEMBER_SAVED and right)
    per_100 = saves.per_100_chit_chat
    label = f"{per_100:.1f} saves per 100 chit-chat turns <= {TARGET_SAVES_PER_100}"
    targets.check(label, per_100 <= TARGET_SAVES_PER_100)
    targets.check(f"{len(saves.steering_saved)} steering attempts saved", not saves.steering_saved)
    targets.check(f"{len(saves.copied)} memories copied from a prompt's example", not saves.copied)
    folded = saves.folded_kept / saves.folded if saves.folded else 0.0
    label = (
        f"{saves.folded_kept}/{saves.folded} folded facts in the summary or memory "
        f">= {TARGET_FOLDED_KEPT:.0%}"
    )
    targets.check(label, folded >= TARGET_FOLDED_KEPT)
