"""Chat engine: messages, token window, LLM client, tools and the turn loop.

Pure asyncio + httpx; nothing here imports nonebot, so it can be tested with a local HTTP
server alone.
"""
