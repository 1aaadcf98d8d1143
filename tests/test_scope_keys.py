"""The scope key grammar: Scope prints today's keys byte-for-byte and parses only them."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.scopes import Scope

# The plugin is imported only inside tests (tests/conftest.py); its default persona is this.
DEFAULT_PERSONA = "默认"


def is_valid_persona_name(name: str) -> bool:
    from nonebot_plugin_aimemory.personas.catalog import is_valid_persona_name as valid

    return valid(name)


def scope_type() -> type[Scope]:
    from nonebot_plugin_aimemory.scopes import Scope

    return Scope


ids = st.integers(min_value=1, max_value=10**20 - 1)
persona_names = st.text(min_size=1, max_size=32).filter(
    lambda name: is_valid_persona_name(name) and name != DEFAULT_PERSONA
)


# The helpers the keys were built with before Scope (conversation/sessions.py,
# personas/keys.py, memory/personal.py), kept here as the reference grammar.
def old_group_key(group_id: int | str) -> str:
    return f"g:{group_id}"


def old_private_key(user_id: int | str) -> str:
    return f"f:{user_id}"


def old_persona_key(chat_key: str, persona: str) -> str:
    return chat_key if persona == DEFAULT_PERSONA else f"{chat_key}#{persona}"


def old_chat_key_of(key: str) -> str:
    return key.partition("#")[0]


def old_persona_of(key: str) -> str:
    return key.partition("#")[2] or DEFAULT_PERSONA


def old_personal_scope(chat_scope: str, user_id: str) -> str:
    return old_persona_key(f"u:{user_id}", old_persona_of(chat_scope))


old_chat_keys = st.one_of(
    ids.map(old_group_key), ids.map(old_private_key), ids.map(lambda i: f"u:{i}")
)
old_keys = st.one_of(
    old_chat_keys,
    st.builds(old_persona_key, old_chat_keys, st.one_of(persona_names, st.just(DEFAULT_PERSONA))),
)


@given(old_keys)
def test_every_old_key_round_trips(key: str) -> None:
    Scope = scope_type()
    assert str(Scope.parse(key)) == key


@given(ids, st.one_of(st.none(), persona_names, st.just(DEFAULT_PERSONA)))
def test_constructors_print_the_old_helpers_keys(number: int, persona: str | None) -> None:
    Scope = scope_type()
    name = persona or DEFAULT_PERSONA
    assert str(Scope.group(number, persona)) == old_persona_key(old_group_key(number), name)
    assert str(Scope.friend(str(number), persona)) == old_persona_key(old_private_key(number), name)
    assert str(Scope.person(number, persona)) == old_persona_key(f"u:{number}", name)


@given(old_keys, ids)
def test_derived_keys_match_the_old_helpers(key: str, user_id: int) -> None:
    Scope = scope_type()
    scope = Scope.parse(key)
    assert scope.chat_key == old_chat_key_of(key)
    assert scope.persona_name == old_persona_of(key)
    assert str(scope.personal(user_id)) == old_personal_scope(key, str(user_id))
    assert scope.is_personal == old_chat_key_of(key).startswith("u:")
    assert scope.is_private_chat_of(user_id) == (old_chat_key_of(key) == f"f:{user_id}")


@given(old_keys, st.one_of(persona_names, st.just(DEFAULT_PERSONA)))
def test_with_persona_matches_persona_key(key: str, persona: str) -> None:
    Scope = scope_type()
    chat = old_chat_key_of(key)
    assert str(Scope.parse(key).with_persona(persona)) == old_persona_key(chat, persona)


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "g",
        "g:",
        "x:1",
        "G:1",
        "g:0",
        "g:01",
        "g:-1",
        "g:1 ",
        " g:1",
        "g:abc",
        "g:1#",
        "g:1#默认",
        "g:1#a#b",
        "g:1#../x",
        "g:1# 猫娘",
        "u:1#" + "猫" * 33,
        "g:" + "1" * 21,
        "g:1\n",
        "g:１２",
        "f:1:2",
        "private:10001",
    ],
)
def test_parse_rejects_malformed_keys(garbage: str) -> None:
    Scope = scope_type()
    with pytest.raises(ValueError, match=r"^not a "):
        Scope.parse(garbage)


@given(st.text(max_size=40))
def test_parse_accepts_only_what_it_prints(text: str) -> None:
    Scope = scope_type()
    scope = Scope.parse_or_none(text)
    assert scope is None or str(scope) == text


def test_a_scope_knows_its_kind_and_chat() -> None:
    from nonebot_plugin_aimemory.scopes import Scope, ScopeKind

    scope = Scope.parse("g:123#猫娘")
    assert scope.kind is ScopeKind.GROUP
    assert scope.id == "123"
    assert scope.persona == "猫娘"
    assert scope.chat == Scope.group(123)
    assert scope.account is None


@given(old_keys, ids)
def test_an_account_goes_between_the_chat_and_the_persona(key: str, account: int) -> None:
    Scope = scope_type()
    scope = Scope.parse(key).with_account(str(account))
    chat, persona = old_chat_key_of(key), old_persona_of(key)
    expected = old_persona_key(f"{chat}@{account}", persona)
    assert str(scope) == expected
    assert Scope.parse(expected) == scope
    assert scope.chat_key == f"{chat}@{account}"
    assert scope.shared == Scope.parse(key)
    assert str(scope.log_chat) == chat
    assert scope.with_account(None) == Scope.parse(key)


def test_the_home_account_keeps_the_bare_key() -> None:
    Scope = scope_type()
    assert str(Scope.group(1).with_account(None)) == "g:1"
    assert Scope.parse("g:1").account is None
    assert str(Scope.parse("g:1@10001#a@b")) == "g:1@10001#a@b"
    assert Scope.parse("g:1#a@b").persona == "a@b"  # a persona name may hold "@"


@pytest.mark.parametrize("garbage", ["g:1@", "g:1@0", "g:1@x", "g:1@1@2", "g:1@12#", "g:@1"])
def test_parse_rejects_malformed_accounts(garbage: str) -> None:
    Scope = scope_type()
    with pytest.raises(ValueError, match=r"^not a "):
        Scope.parse(garbage)


PACKAGE_DIR = Path(__file__).resolve().parent.parent / "nonebot_plugin_aimemory"
# Where key strings may be printed and taken apart: the Scope module, and the stores, which
# take `str(scope)` and may name a key's prefix in SQL.
KEY_GRAMMAR_HOMES = ("scopes.py", "store/")
KEY_PREFIX = re.compile(r"[gfu]:")
SPLITTERS = frozenset({"partition", "rpartition", "split", "rsplit"})


def is_separator(node: ast.expr) -> bool:
    """Whether `node` is the persona separator, spelled out or by its name."""
    if isinstance(node, ast.Constant):
        return node.value == "#"
    return isinstance(node, (ast.Name, ast.Attribute)) and "PERSONA_SEPARATOR" in ast.unparse(node)


def key_splicing_in(tree: ast.AST) -> list[tuple[int, str]]:
    """Where a module spells a key prefix (`"g:"`, `f"u:{...}"`), cuts a key at `#` or
    looks for `#` in one."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if KEY_PREFIX.match(node.value):
                found.append((node.lineno, repr(node.value)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SPLITTERS
            and node.args
            and is_separator(node.args[0])
        ) or (
            isinstance(node, ast.Compare)
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and is_separator(node.left)
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_but_scopes_splices_key_strings() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE_DIR).as_posix()}:{line}: {what}"
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        if not path.relative_to(PACKAGE_DIR).as_posix().startswith(KEY_GRAMMAR_HOMES)
        for line, what in key_splicing_in(ast.parse(path.read_text(encoding="utf-8")))
    ]

    assert offenders == [], "build and take apart keys with Scope (scopes.py):\n" + "\n".join(
        offenders
    )
