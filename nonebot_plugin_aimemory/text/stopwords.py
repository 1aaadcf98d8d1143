"""Words a search query can do without: function words of Chinese and English, and the words
a question to a memory uses to ask for recall ("还记得", "remember"). Queries drop them; the
index keeps every word, so changing these lists never needs a re-index.

Sources, trimmed to function words (pronouns, particles, prepositions, conjunctions, auxiliary
and modal verbs, degree and aspect adverbs, interrogatives, demonstratives); words that also
carry content in ordinary chat ("想", "特别", "用", "叫", "may") were left out:
- Chinese: the HIT (哈工大) stopword list and the Baidu stopword list, as published in
  github.com/goto456/stopwords (hit_stopwords.txt, baidu_stopwords.txt).
- English: NLTK's English stopword list (nltk_data corpora/stopwords/english; contraction
  fragments such as "don", "t", "ll" included because the segmenter splits at apostrophes),
  plus the modal verbs of the SMART list (Salton's SMART system, english.stop) that NLTK lacks.
"""

from __future__ import annotations


def _listed(words: str) -> frozenset[str]:
    return frozenset(words.split())


CHINESE_FUNCTION_WORDS = _listed(
    """
    我 你 您 他 她 它 我们 你们 他们 她们 它们 咱 咱们 俺 自己 人家 大家 别人
    这 那 这个 那个 这些 那些 这里 那里 这儿 那儿 这边 那边 这样 那样 这么 那么 这种 那种
    此 该 其 其他 其它 其中 某 某些 每 各 各种 有些 有的 一些 一个 一下 一点 有点 些 个
    什么 啥 怎么 怎样 怎么样 如何 为什么 为何 哪 哪个 哪些 哪里 哪儿 谁 几 多少 么
    的 地 得 之 了 着 过 吗 呢 吧 啊 呀 哦 嗯 哈 嘛 呗 啦 喽 哟 哇 噢 呃 欸 诶 呵 哎 嘿
    和 与 及 以及 或 或者 还是 而 而且 并且 并 但 但是 可是 然而 不过 因为 所以 因此
    如果 假如 要是 虽然 尽管 即使 既然 于是 然后 接着 否则 不然
    在 从 到 对 对于 关于 向 往 朝 把 被 给 让 比 跟 同 为 为了 由 以 按 按照 根据 通过
    除了 随着 至于 于 将
    也 都 就 才 又 再 还 很 太 更 最 非常 十分 比较 已经 已 正在 一直 总是 只 只是 仅 仅仅
    不 没 没有 别 刚 刚才 马上 可能 也许 大概 一定 当然 其实
    是 有 会 能 可以 要 应该 可 能够
    """
)

# Said to ask a memory for something, not part of what is asked for.
CHINESE_RECALL_WORDS = _listed(
    "记得 还记得 记不记得 提到 提到过 提过 提起 曾经 曾 之前 以前 当时 那时 那天 来着"
)

ENGLISH_FUNCTION_WORDS = _listed(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will
    just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
    mightn mustn needn shan shouldn wasn weren won wouldn
    would could shall might must
    """
)

ENGLISH_RECALL_WORDS = _listed("remember remembered recall recalled mention mentioned")

STOPWORDS = CHINESE_FUNCTION_WORDS | CHINESE_RECALL_WORDS | ENGLISH_FUNCTION_WORDS
STOPWORDS |= ENGLISH_RECALL_WORDS

# Characters that are function words on their own: a query's character bigram holding one
# ("是谁", "说的") is no name and no slang.
STOP_CHARACTERS = frozenset(word for word in CHINESE_FUNCTION_WORDS if len(word) == 1)


def is_stopword(word: str) -> bool:
    """Whether a query can drop `word` (lower-cased) without losing what it asks for."""
    return word in STOPWORDS


def is_recall_word(word: str) -> bool:
    """Whether `word` only asks for recall ("记得", "remember")."""
    return word in CHINESE_RECALL_WORDS or word in ENGLISH_RECALL_WORDS
