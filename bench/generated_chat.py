"""Generated group chat and memories for the benches: who speaks, the words their lines and
memories are filled from, and the lines themselves (seeded, so a run can be repeated)."""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from typing import Any, NamedTuple

from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message

from tests.fakes.events import EVENT_TIME, group_message

SPEAKERS = (("小明", 2001), ("阿强", 2002), ("Lily", 2003), ("老王", 2004), ("糖糖", 2005))
# Slot values of the chat, memory and query templates (a template names a slot {pool}).
POOLS: dict[str, tuple[str, ...]] = {
    pool: tuple(words.split())
    for pool, words in {
        "name": "小明 阿强 Lily 老王 糖糖 夜猫子 张伟 李娜 王芳 刘洋 陈静 杨帆 赵磊 黄丽 周洁 "
        "吴敏 徐涛 孙悦 马超 朱婷 郭靖宇 林小雨 何雪 高远 罗琳 郑凯 梁晨 谢婷婷 宋佳 唐宁 "
        "韩梅梅 阿杰 大熊 豆豆 小鱼 老李 Kevin Amy Tom Jason",
        "food": "火锅 烧烤 麻辣烫 螺蛳粉 寿司 披萨 小龙虾 红烧肉 饺子 牛肉面 煎饼果子 烤鸭 "
        "酸菜鱼 肠粉 炸鸡 冒菜 生煎 羊肉串 番茄炒蛋 榴莲 奶茶 热干面 凉皮 香菜 芒果",
        "city": "北京 上海 杭州 成都 重庆 西安 南京 武汉 广州 深圳 苏州 长沙 厦门 青岛 大连 "
        "哈尔滨 昆明 洛阳 天津 宁波",
        "place": "公司楼下 地铁站 商场 食堂 健身房 图书馆 西湖边 快递柜 会议室 电梯口 学校门口 "
        "小区门口 老家 机场",
        "when": "明天 后天 周末 下周三 周五晚上 这个月底 下个月初 国庆 元旦 春节前 今晚 下班后 "
        "明早八点 十二月中旬",
        "past": "昨天 上周 上个月 前天 去年 今年三月 上周末",
        "game": "王者荣耀 原神 英雄联盟 我的世界 星露谷物语 塞尔达 斗地主",
        "movie": "流浪地球 奥本海默 沙丘 封神 满江红 哪吒 星际穿越 千与千寻",
        "thing": "机械键盘 降噪耳机 电动牙刷 扫地机器人 显示器 空气炸锅 露营帐篷 移动硬盘 "
        "人体工学椅 咖啡机 蓝牙音箱 保温杯 充电宝",
        "tech": "数据库 服务器 接口 前端页面 登录模块 缓存 消息队列 定时任务 单元测试 CI流水线 "
        "支付回调 日志系统 网关",
        "error": "KeyError TimeoutError ConnectionRefusedError OOMKilled 502 segfault ENOSPC",
        "en_word": "deploy release hotfix rollback docker kubernetes python redis nginx github "
        "bug review merge meeting deadline",
        "singer": "周杰伦 陈奕迅 林俊杰 五月天 邓紫棋 薛之谦 王菲 李健",
        "pet": "橘猫 布偶猫 英短 柯基 金毛 柴犬 仓鼠 鹦鹉 乌龟 兔子",
        "hobby": "爬山 打羽毛球 游泳 弹吉他 拍照 跑步 钓鱼 下围棋 追番",
        "weather": "下大雨 降温了 好热 刮大风 下雪了 雾霾很重 出太阳了",
        "reaction": "哈哈哈哈 笑死 +1 收到 好的好的 确实 666 牛啊 ？？？ 在吗 来了来了 晚安 "
        "没毛病 绝了 破防了 有道理 离谱 好耶",
    }.items()
}
# Clauses of group chat; a line is one or more, {num}/{price}/{order} drawn fresh each time.
CLAUSES: tuple[str, ...] = (
    *("{when}去吃{food}吗，{place}新开了一家", "@{name} 你那个{tech}的问题解决了没"),
    *("刚才{game}又输了，队友太坑了", "{city}今天{weather}，出门记得带伞"),
    *("有人看过{movie}吗，评价怎么样", "我{when}要去{city}出差，有没有人推荐{food}"),
    *("这个{thing}才{price}块，比上次便宜多了", "{tech}又报错了：{error}"),
    *("PR #{num} 已经 merge 了，大家 rebase 一下", "{name}说{when}的聚餐改到{place}了"),
    *("求推荐一款{thing}，预算{price}以内", "@{name} 你的快递到了，放在{place}"),
    *("{name}的{pet}好可爱，叫什么名字", "{when}开会，记得把{tech}的方案准备好"),
    *("{food}和{food}哪个好吃，在线等，挺急的", "{city}到{city}的高铁票好难抢"),
    *("这首{singer}的新歌真好听，循环一下午了", "订单号{order}，麻烦帮我查一下"),
    *("{name}你上次推荐的{thing}我买了，确实好用", "今天{place}人好多，排了{num}分钟队"),
    *("有没有人{when}一起去{city}看{singer}的演唱会", "我妈又在家族群里转发养生文章了"),
    *("快递显示已签收，但我根本没收到", "最近在学做饭，{past}第一次做了{food}"),
    *("周末要不要一起去{hobby}，天气预报说是晴天", "anyone up for {game} tonight?"),
    *("the {en_word} job failed with {error}", "{reaction}", "@{name} {reaction}"),
)
PUNCTUATION = ("，", "。", "！", "？", "……", "～", " ")
USER_IDS = {name: str(20001 + i) for i, name in enumerate(POOLS["name"])}
# (content, tags) of memories; the same person or object recurs in different wordings.
MEMORY_TEMPLATES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("{name}住在{city}，离公司大概{num}米", ("住址", "{name}")),
    ("{name}的老家在{city}", ("老家", "{name}")),
    ("{name}喜欢吃{food}", ("饮食", "偏好")),
    ("{name}不吃{food}，聚餐时记得避开", ("饮食", "忌口")),
    ("{name}养了一只{pet}", ("宠物", "{name}")),
    ("{name}最喜欢的歌手是{singer}", ("音乐", "偏好")),
    ("{name}平时喜欢{hobby}，周末经常去", ("爱好", "{name}")),
    ("{name}玩{game}很厉害", ("游戏", "{name}")),
    ("{name}{when}要去{city}出差", ("计划", "{name}")),
    ("{name}{past}在{place}丢了{thing}", ("事件", "{name}")),
    ("{name}{past}买了{thing}，花了{price}块", ("购物", "{name}")),
    ("{name}负责{tech}，出了问题找他", ("工作", "{name}")),
    ("{when}的聚餐定在{city}的{place}，{name}负责订位", ("聚餐", "安排")),
    ("{name}觉得{movie}很好看，推荐大家去看", ("电影", "{name}")),
)


class Memory(NamedTuple):
    """What the model would pass to the save tool."""

    content: str
    tags: tuple[str, ...]
    user_id: str | None


def memories(rng: random.Random, count: int, seen: set[str]) -> list[Memory]:
    """`count` memories whose content is new to `seen` (which they are added to)."""
    result: list[Memory] = []
    while len(result) < count:
        template, tag_templates = rng.choice(MEMORY_TEMPLATES)
        picks: dict[str, str] = {}
        content = fill(rng, template, picks)
        if content not in seen:
            seen.add(content)
            tags = tuple(fill(rng, tag, picks) for tag in tag_templates)
            owned = "name" in picks and rng.random() < 0.7
            result.append(Memory(content, tags, USER_IDS.get(picks["name"]) if owned else None))
    return result


async def save(service: Any, scope: str, memory: Memory) -> str:
    """Save `memory` in `scope` as the save tool would (`service` a MemoryService); the status."""
    return (
        await service.save(scope, memory.content, tags=memory.tags, user_id=memory.user_id)
    ).status


def distinct(rng: random.Random, templates: Sequence[str], count: int) -> list[str]:
    """`count` distinct fills of `templates` (a repeated query would hit a cache)."""
    found: dict[str, None] = {}
    while len(found) < count:
        found[fill(rng, rng.choice(templates))] = None
    return list(found)


def addressed(
    content: str | Message, group_id: int, rng: random.Random, sent_at: int = EVENT_TIME
) -> GroupMessageEvent:
    """A group message to the bot (`to_me`, as an @ or a reply makes it) from a SPEAKER."""
    name, user_id = rng.choice(SPEAKERS)
    return group_message(
        content, group_id=group_id, user_id=user_id, card=name, to_me=True, event_time=sent_at
    )


def draw(rng: random.Random, slot: str) -> str:
    """One value of `slot`: a pool entry, or a fresh number for num/price/order."""
    if slot == "num":
        return str(rng.randint(2, 9999))
    if slot == "price":
        return str(rng.choice((rng.randint(9, 99), rng.randint(100, 2999))))
    if slot == "order":
        return str(rng.randint(10**11, 10**12 - 1))
    return rng.choice(POOLS[slot])


def fill(rng: random.Random, template: str, picks: dict[str, str] | None = None) -> str:
    """`template` with its slots drawn; with `picks`, a slot repeats the value first drawn."""
    pieces: list[str] = []
    for literal, slot, _, _ in string.Formatter().parse(template):
        pieces.append(literal)
        if slot and picks is None:
            pieces.append(draw(rng, slot))
        elif slot and picks is not None:
            if slot not in picks:
                picks[slot] = draw(rng, slot)
            pieces.append(picks[slot])
    return "".join(pieces)


def chat_line(rng: random.Random, min_chars: int = 10, max_chars: int = 150) -> str:
    """One group-chat line of `min_chars`..`max_chars` characters, clauses joined up."""
    target = rng.randint(min_chars, max_chars)
    line = fill(rng, rng.choice(CLAUSES))
    while len(line) < target:
        line += rng.choice(PUNCTUATION) + fill(rng, rng.choice(CLAUSES))
    return line[:target]
