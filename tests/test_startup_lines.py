"""The start-up lines in the cases a real start in the tests does not reach: PostgreSQL
(its password never shown), no database, a driver that serves nothing; and the panel's
line naming the try page, off and on."""

from __future__ import annotations


def config(**values: str):
    from pydantic import SecretStr

    from nonebot_plugin_aimemory.config import Config

    secrets = {
        key: SecretStr(value) for key, value in values.items() if key.endswith(("url", "token"))
    }
    return Config(**{**values, **secrets})


def test_a_postgresql_database_is_named_without_its_password() -> None:
    from nonebot_plugin_aimemory.startup_lines import startup_lines

    url = "postgresql://aimemory:s3cret-pass@127.0.0.1:5432/aimemory"
    lines = startup_lines(
        config(aimemory_database_url=url),
        onebot_url=None,
        access_token_set=False,
        database=url,
        panel_url=None,
    )
    text = "\n".join(lines)
    assert "数据保存在 PostgreSQL：postgresql://aimemory:***@127.0.0.1:5432/aimemory" in text
    assert "s3cret-pass" not in text
    assert "不提供反向 WebSocket 服务" in text


def test_without_a_database_or_a_web_server_the_lines_say_so() -> None:
    from nonebot_plugin_aimemory.startup_lines import startup_lines

    lines = startup_lines(
        config(aimemory_panel_token="a-panel-password-of-16+"),
        onebot_url="ws://127.0.0.1:8080/onebot/v11/ws",
        access_token_set=False,
        database=None,
        panel_url=None,
    )
    assert len(lines) == 4
    assert "数据只在内存里" in lines[2]
    assert "不提供网页服务" in lines[3]


def test_the_panel_line_names_the_try_page_whether_the_panel_is_off_or_on() -> None:
    from nonebot_plugin_aimemory.startup_lines import startup_lines

    url = "http://127.0.0.1:8080/aimemory"
    off = startup_lines(
        config(), onebot_url=None, access_token_set=False, database=None, panel_url=url
    )[3]
    on = startup_lines(
        config(aimemory_panel_token="a-panel-password-of-16+"),
        onebot_url=None,
        access_token_set=False,
        database=None,
        panel_url=url,
    )[3]

    assert "AIMEMORY_PANEL_TOKEN=" in off
    assert f"{url}/try" in off
    assert f"{url}/try" in on
