"""Token cost and fact retention of a long group conversation under the rolling summary.

Drives the real engine (`ChatBot.turn`) for a scripted 500-turn QQ group conversation: six
speakers, Chinese lines of 20-120 characters in the plugin's `[2026-11-30 14:05] 昵称(QQ)：…`
form, and about 40 of them (one turn in 12.5) stating a tagged fact such as `#fact17:小明吃素`.
The window is persisted in a real `SqliteHistoryStore` on a temporary file and compressed by
the real `Compressor` with the plugin's default policy for `--budget` (8000 tokens unless
given). The model is the fake OpenAI server on 127.0.0.1 (tests/fakes) answering with
`FactKeepingLLM`: chat replies of 20-80 characters whose `prompt_tokens` are counted with
cl100k, and summaries that keep every `#factN:…` tag they are shown.

Printed:
- prompt tokens of each chat request as the fake counted them: max, mean, any over budget;
- total prompt tokens of the run (chat requests, then with the compression requests) against
  (a) the full-history baseline: every request carries the system prompt and the whole
  transcript so far, and (b) a fixed window of the last 20 messages (the new one included),
  both counted with the same counter over the same conversation;
- compressions done, compressor calls, truncation fallbacks;
- how many of the stated facts are still in the final request's messages (summary included).

Targets: no request over the budget; total (compression requests included) <= 30 % of the
full-history baseline; 100 % of the tagged facts retained. Timings are printed, not asserted.

Run: /tmp/venv/bin/python bench/long_conversation.py [--quick] [--turns N] [--budget TOKENS]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import init_nonebot, verdict

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.compressor import Compaction
    from tests.fakes.openai_server import Reply

SEED = 20261130
DEFAULT_TURNS = 500
DEFAULT_BUDGET_TOKENS = 8000
QUICK_TURNS = 80
QUICK_BUDGET_TOKENS = 2000
MIN_BUDGET_TOKENS = 1024  # Config.aimemory_max_context_tokens
TURNS_PER_FACT = 12.5
FIXED_WINDOW_MESSAGES = 20
TARGET_FULL_HISTORY_RATIO = 0.30
SESSION_KEY = "g:736451029"
START_TIME = datetime(2026, 11, 30, 9, 0)
SPEAKERS = (
    ("小明", 2001),
    ("阿强", 2002),
    ("Lily", 2003),
    ("老王", 2004),
    ("糖糖", 2005),
    ("夜猫子", 2006),
)

# Everyday group chat; a line is a few of these joined up to its target length.
CHAT_FRAGMENTS = (
    "今天下班路上看到一家新开的奶茶店",
    "排队的人特别多，我等了快二十分钟",
    "周末要不要一起去爬山，天气预报说是晴天",
    "我刚把项目的接口文档更新了一版",
    "有人知道地铁十号线晚上几点停运吗",
    "昨天那部电影的结局我真的没看懂",
    "猫又把桌上的杯子推下去了",
    "这周的周报还差两段没写完",
    "楼下食堂今天的红烧肉居然还不错",
    "谁有空帮我看看这段 Python 报错",
    "KeyError: 'user_id' 出现在第 42 行",
    "下个月的团建大家有什么想法",
    "我觉得还是先把需求确认清楚再动手比较好",
    "刚才开会说的那个方案预算大概要多少",
    "明天早上八点半在公司楼下集合",
    "群里有没有人用过那个新出的记账软件",
    "感冒好几天了嗓子一直不舒服",
    "话说你们平时都用什么输入法",
    "这个价格其实挺划算的，比上次便宜了三十块",
    "我妈又在家族群里转发养生文章了",
    "快递显示已签收但我根本没收到",
    "最近在学做饭，昨天第一次成功做了番茄炒蛋",
    "服务器又挂了，运维说是磁盘满了",
    "有推荐的机械键盘吗，预算五百以内",
    "考研倒计时一百天压力好大",
    "这次版本更新把常用的功能藏到设置里去了",
    "晚上打游戏吗三缺一",
    "他说的也有道理",
    "不过我还是有点担心时间来不及",
    "刚看到新闻说明天要降温十度",
    "哈哈哈哈笑死我了",
    "真的假的",
    "我也是这么想的",
    "有没有人一起拼车去机场",
    "周五晚上那家火锅店还订得到位置吗",
    "新买的耳机降噪效果一般般",
    "求推荐几本适合通勤路上看的书",
    "我家楼下又在装修，从早上七点吵到现在",
    "@小忆 你觉得呢",
    "小忆帮我查一下这个怎么弄",
    "上次说的那个旅行攻略谁整理好了",
    "今天的晚霞特别好看，可惜没带相机",
    "公司空调又坏了热得不行",
    "刚面完试，感觉还行吧",
    "这道数学题我算了三遍答案都不一样",
    "二手平台上挂的显示器终于卖出去了",
    "明天记得带伞",
    "我先去吃饭了回头聊",
)
CHAT_ENDINGS = ("，", "。", "！", "？", "……", "～", " ")

# Facts about the group, each a value the compressor's tag pattern captures whole.
FACT_VALUES = (
    "小明吃素",
    "阿强对花生过敏",
    "Lily的生日是三月三日",
    "老王住在杭州西湖区",
    "糖糖养了一只橘猫叫年糕",
    "夜猫子是夜班护士",
    "小明下周三去上海出差",
    "阿强的车是白色的",
    "团建定在十二月十四日",
    "老王只喝乌龙茶",
    "Lily在准备日语N2考试",
    "糖糖周末搬家到滨江",
    "群文件密码是0427",
    "小明的女朋友叫阿珍",
    "阿强会弹吉他",
    "老王的女儿今年高考",
    "夜猫子不吃香菜",
    "Lily每周二去游泳",
    "糖糖在一家游戏公司做美术",
    "聚餐预算每人一百五",
    "小明负责订酒店",
    "阿强负责租车",
    "老王的老家在洛阳",
    "夜猫子养了两只仓鼠",
    "Lily的英文名是她奶奶起的",
    "糖糖乳糖不耐受",
    "周报每周五下午五点前交",
    "小明的工号是A1093",
    "阿强喜欢周杰伦",
    "老王戒烟三个月了",
    "夜猫子下个月调去白班",
    "Lily住在学校东门附近",
    "糖糖的猫年糕三岁了",
    "羽毛球每周六上午九点",
    "小明用的是五笔输入法",
    "阿强的狗叫旺财",
    "老王做的红烧肉最好吃",
    "夜猫子老家在哈尔滨",
    "Lily对猫毛过敏",
    "糖糖想学潜水",
    "年会节目是合唱",
    "小明在学吉他",
)
FACT_TEMPLATES = (
    "跟大家说一下，{tag}，以后安排的时候注意一下。",
    "记一下：{tag}。",
    "{tag}，这个我上次好像忘了说",
    "对了小忆你记住，{tag}。",
    "补充一句 {tag}，别搞错了哈",
    "刚确认过了，{tag}。有问题再找我。",
)

REPLY_FRAGMENTS = (
    "好的，我记下了",
    "这个问题挺常见的",
    "可以先试试重启一下",
    "听起来很不错呀",
    "我建议先把时间定下来再说",
    "辛苦啦，早点休息",
    "哈哈确实有点离谱",
    "如果需要的话我可以帮忙整理一份清单",
    "天气变化大，大家注意保暖",
    "这个我不太确定，最好再确认一下",
    "报错一般是字典里没有这个键，可以先用 get 取值",
    "周末出门记得看一下路况",
    "番茄炒蛋先炒蛋再炒番茄会更好吃",
    "五百以内可以看看国产的茶轴键盘",
    "加油，坚持就是胜利",
    "大家的意见我汇总一下",
)
REPLY_ENDINGS = ("，", "。", "！", "～")


@dataclass
class Transcript:
    """The conversation as sent, and what the two baselines would have cost for it."""

    system_tokens: int
    message_tokens: list[int] = field(default_factory=list)
    full_history_total: int = 0
    fixed_window_total: int = 0

    def add_request(self, user_tokens: int) -> None:
        """Account for the request carrying the new user message, then keep it."""
        self.message_tokens.append(user_tokens)
        self.full_history_total += self.system_tokens + sum(self.message_tokens)
        recent = self.message_tokens[-FIXED_WINDOW_MESSAGES:]
        self.fixed_window_total += self.system_tokens + sum(recent)

    def add_reply(self, reply_tokens: int) -> None:
        self.message_tokens.append(reply_tokens)


def build_line(rng: random.Random, fragments: Sequence[str], endings: Sequence[str]) -> str:
    """Fragments joined to a length drawn from 20..120 characters (a short one stays short)."""
    target = rng.randint(20, 120)
    line = ""
    while True:
        piece = rng.choice(fragments) + rng.choice(endings)
        if line and len(line) + len(piece) > target:
            break
        line += piece
    return line.strip()


def chat_text(rng: random.Random) -> str:
    """One group member's line, 20-120 characters."""
    while True:
        line = build_line(rng, CHAT_FRAGMENTS, CHAT_ENDINGS)
        if 20 <= len(line) <= 120:
            return line


def fact_text(rng: random.Random, tag: str) -> str:
    """A line stating `tag`, sometimes with a bit of chatter after it."""
    line = rng.choice(FACT_TEMPLATES).format(tag=tag)
    if len(line) < 20 or (len(line) < 40 and rng.random() < 0.5):
        line += rng.choice(CHAT_FRAGMENTS) + "。"
    return line


def reply_text(rng: random.Random) -> str:
    """The bot's answer, 20-80 characters."""
    reply = ""
    target = rng.randint(20, 80)
    while len(reply) < target:
        reply += rng.choice(REPLY_FRAGMENTS) + rng.choice(REPLY_ENDINGS)
    return reply[:80]


def fact_turns(turns: int) -> dict[int, int]:
    """Turn index -> fact number, spread evenly over the run (about one per 12.5 turns)."""
    count = min(len(FACT_VALUES), max(1, round(turns / TURNS_PER_FACT)))
    step = turns / count
    return {int(step * n + step / 2): n for n in range(count)}


def fact_tag(number: int) -> str:
    return f"#fact{number + 1}:{FACT_VALUES[number]}"


def group_system_prompt() -> str:
    """The system prompt the plugin sends in a group (as Runtime.system_prompt_for builds it)."""
    from nonebot_plugin_aimemory.config import DEFAULT_SYSTEM_PROMPT
    from nonebot_plugin_aimemory.runtime import build_system_prompt

    return build_system_prompt(DEFAULT_SYSTEM_PROMPT, SESSION_KEY)


def make_responder(seed: int) -> Any:
    """FactKeepingLLM with varied 20-80-character chat replies, recording every prompt size."""
    from tests.fakes.responders import FactKeepingLLM, is_compression_request

    class ChattyFactKeepingLLM(FactKeepingLLM):
        """Replies vary; chat and compression prompt sizes and the last request are kept."""

        def __init__(self) -> None:
            super().__init__()
            self.rng = random.Random(seed)
            self.chat_prompt_tokens: list[int] = []
            self.compression_prompt_tokens: list[int] = []
            self.last_chat_messages: list[dict[str, Any]] = []

        def __call__(self, body: dict[str, Any]) -> Reply:
            messages = body["messages"]
            if is_compression_request(body):
                self.compression_prompt_tokens.append(self.count_tokens(messages))
                return super().__call__(body)
            self.reply = reply_text(self.rng)
            answer = super().__call__(body)
            usage = answer.usage  # type: ignore[union-attr]
            self.chat_prompt_tokens.append(usage["prompt_tokens"])
            self.last_chat_messages = messages
            return answer

    return ChattyFactKeepingLLM()


def make_compressor_class() -> Any:
    """The real Compressor, counting the truncation fallbacks it takes."""
    from nonebot_plugin_aimemory.engine.compressor import Compressor

    class CountingCompressor(Compressor):
        """Compressor with a tally of truncations (failed or impossible folds)."""

        fallbacks = 0

        def truncate(self, key: str, window: Sequence[Any], *, reason: str) -> Compaction:
            self.fallbacks += 1
            return super().truncate(key, window, reason=reason)

    return CountingCompressor


def percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


async def reloads_identically(bot: ChatBot) -> bool:
    """A bot loading the same session from the store sees exactly the in-memory window."""
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot

    reloaded = ChatBot(
        bot.key,
        llm=bot.llm,
        store=bot.store,
        counter=bot.counter,
        system_prompt=bot.system_message.text,
        compressor=bot.compressor,
    )
    await reloaded.load()
    return [m.to_api() for m in reloaded.window.messages] == [
        m.to_api() for m in bot.window.messages
    ]


async def run(turns: int, budget_tokens: int, work_dir: str) -> None:
    import httpx

    from nonebot_plugin_aimemory.config import Config
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS
    from nonebot_plugin_aimemory.runtime import compression_policy
    from nonebot_plugin_aimemory.store.database import Database
    from nonebot_plugin_aimemory.store.history_store import SqliteHistoryStore
    from tests.fakes.openai_server import FakeOpenAI
    from tests.fakes.responders import count_prompt_tokens

    def tokens_of(role: str, content: str) -> int:
        return count_prompt_tokens([{"role": role, "content": content}])

    rng = random.Random(SEED)
    facts_at = fact_turns(turns)
    stated: list[str] = []
    counter = TiktokenCounter()
    counter.load()
    policy = compression_policy(Config(aimemory_max_context_tokens=budget_tokens))
    system_prompt = group_system_prompt()
    transcript = Transcript(system_tokens=tokens_of("system", system_prompt))
    responder = make_responder(SEED + 1)
    database = await Database.open(Path(work_dir) / "history.db")
    started = time.perf_counter()
    with FakeOpenAI(api_key="sk-bench") as llm:
        llm.responder = responder
        async with httpx.AsyncClient() as http:
            endpoint = Endpoint(llm.base_url, "sk-bench", "gpt-4o-mini")
            client = LLMClient(http, endpoint, timeout_seconds=30)
            compressor = make_compressor_class()(client, counter, policy, prompts=SUMMARY_PROMPTS)
            bot = ChatBot(
                SESSION_KEY,
                llm=client,
                store=SqliteHistoryStore(database),
                counter=counter,
                system_prompt=system_prompt,
                compressor=compressor,
            )
            await bot.load()
            sent_at = START_TIME
            for index in range(turns):
                sent_at += timedelta(seconds=rng.randint(5, 240))
                name, user_id = rng.choice(SPEAKERS)
                if index in facts_at:
                    tag = fact_tag(facts_at[index])
                    stated.append(tag)
                    body = fact_text(rng, tag)
                else:
                    body = chat_text(rng)
                line = f"[{sent_at:%Y-%m-%d %H:%M}] {name}({user_id})：{body}"
                transcript.add_request(tokens_of("user", line))
                result = await bot.turn(Message("user", line))
                transcript.add_reply(tokens_of("assistant", result.reply))
            same_after_reload = await reloads_identically(bot)
    await database.close()
    elapsed_seconds = time.perf_counter() - started

    sizes: list[int] = responder.chat_prompt_tokens
    chat_total = sum(sizes)
    compression_total = sum(responder.compression_prompt_tokens)
    run_total = chat_total + compression_total
    over = [(i + 1, size) for i, size in enumerate(sizes) if size > budget_tokens]
    final_text = "\n".join(str(m.get("content") or "") for m in responder.last_chat_messages)
    missing = [tag for tag in stated if tag not in final_text]
    kept = len(stated) - len(missing)
    summary_tokens = counter.count(bot.summary or "")

    print(
        f"long group conversation: {turns} turns, budget {budget_tokens} tokens "
        f"(compress above {policy.trigger_tokens:.0f}, keep ~{policy.keep_recent_tokens} "
        f"verbatim, summary <= {policy.summary_max_tokens}, chunks of {policy.chunk_tokens})"
    )
    print(f"  chat requests: {len(sizes)} (one per turn expected: {len(sizes) == turns})")
    print(
        f"  prompt tokens per turn: max {max(sizes)}, mean {chat_total / len(sizes):.0f}; "
        f"turns over budget: {len(over)}" + (f" {over[:5]}" if over else "")
    )
    print("  total prompt tokens:")
    print(f"    this run, chat requests         {chat_total:>12,}")
    print(
        f"    this run, with compression      {run_total:>12,}  "
        f"({len(responder.compression_prompt_tokens)} compressor calls, "
        f"{compression_total:,} tokens)"
    )
    print(
        f"    (a) full history every turn     {transcript.full_history_total:>12,}  "
        f"run = {percent(chat_total, transcript.full_history_total)} "
        f"(with compression {percent(run_total, transcript.full_history_total)})"
    )
    print(
        f"    (b) last {FIXED_WINDOW_MESSAGES} messages only       "
        f"{transcript.fixed_window_total:>12,}  "
        f"run = {percent(chat_total, transcript.fixed_window_total)} "
        f"(with compression {percent(run_total, transcript.fixed_window_total)})"
    )
    print(
        f"  compressions: {bot.stats.count} done, {compressor.fallbacks} truncation fallbacks; "
        f"final summary {summary_tokens} tokens, window {len(bot.window)} messages"
    )
    print(
        f"  tagged facts in the final request: {kept}/{len(stated)} "
        f"({percent(kept, len(stated))})" + (f"; missing: {', '.join(missing)}" if missing else "")
    )
    print(f"  window reloaded from SQLite identical: {'yes' if same_after_reload else 'no'}")
    print(f"  wall time: {elapsed_seconds:.1f} s")

    never_over = not over
    cheap_enough = run_total <= TARGET_FULL_HISTORY_RATIO * transcript.full_history_total
    all_facts = not missing
    print(verdict("no request over the budget", never_over))
    print(
        verdict(
            f"total with compression <= {TARGET_FULL_HISTORY_RATIO:.0%} of full history",
            cheap_enough,
        )
    )
    print(verdict("100 % of tagged facts retained", all_facts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few-second smoke run")
    parser.add_argument("--turns", type=int, help=f"turns (default {DEFAULT_TURNS})")
    parser.add_argument(
        "--budget", type=int, help=f"token budget (default {DEFAULT_BUDGET_TOKENS})"
    )
    args = parser.parse_args()
    turns = QUICK_TURNS if args.quick else DEFAULT_TURNS
    if args.turns is not None:
        turns = args.turns
    budget_tokens = QUICK_BUDGET_TOKENS if args.quick else DEFAULT_BUDGET_TOKENS
    if args.budget is not None:
        budget_tokens = args.budget
    if turns < 1:
        parser.error("--turns must be at least 1")
    if budget_tokens < MIN_BUDGET_TOKENS:
        parser.error(f"--budget must be at least {MIN_BUDGET_TOKENS} (the plugin's minimum)")
    with tempfile.TemporaryDirectory(prefix="aimemory-bench-") as work_dir:
        init_nonebot(work_dir)
        asyncio.run(run(turns, budget_tokens, work_dir))


if __name__ == "__main__":
    main()
