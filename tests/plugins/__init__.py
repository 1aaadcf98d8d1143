"""Other plugins loaded in the test bot beside nonebot-plugin-aimemory."""
