"""The rules of docs/architecture.md ("代码风格") a tool can check, over every module of the
plugin package: short modules, short functions, no section-header banners, and the engine's
imports (no cycle between the LLM client and the usage meter, no NoneBot). The layers of the
import graph are tests/test_layers.py's."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "nonebot_plugin_aimemory"
PACKAGE = PACKAGE_DIR.name
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# A run of three or more of the characters section headers are drawn with.
BANNER_RUN = re.compile(r"[-=#*]{3,}")
LLM_MODULE = f"{PACKAGE}.engine.llm"
USAGE_MODULE = f"{PACKAGE}.engine.usage"


def modules() -> list[Path]:
    """Every Python module of the package."""
    return sorted(PACKAGE_DIR.rglob("*.py"))


def relative(path: Path) -> str:
    """The path as a failure message names it: `nonebot_plugin_aimemory/...`."""
    return path.relative_to(PACKAGE_DIR.parent).as_posix()


@cache
def source(path: Path) -> str:
    """The module's text, read once for all the rules."""
    return path.read_text(encoding="utf-8")


@cache
def syntax_tree(path: Path) -> ast.Module:
    """The module parsed, once for all the rules."""
    return ast.parse(source(path), filename=str(path))


def module_name(path: Path) -> str:
    """`nonebot_plugin_aimemory/engine/llm.py` as `nonebot_plugin_aimemory.engine.llm`."""
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_banner(comment: str) -> bool:
    """A comment line drawn as a section header: `# ---- x ----`, `# =====`, `#######`."""
    body = comment.lstrip("#").strip()
    if not body:
        return len(comment.strip()) >= 3
    if BANNER_RUN.match(body) or BANNER_RUN.fullmatch(body.split()[-1]):
        return True
    drawn = sum(len(run) for run in BANNER_RUN.findall(body))
    return drawn * 2 > len(body.replace(" ", ""))


def comments(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment in the module (not `#` inside strings)."""
    tokens = tokenize.generate_tokens(io.StringIO(source(path)).readline)
    return [(tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.COMMENT]


def imported_names(path: Path, *, members: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every import in the module, wherever it stands, relative ones
    resolved; with `members`, `from x import y` names `x.y` instead (`y` may be a module)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(syntax_tree(path)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            target = ".".join(part for part in (base, node.module) if part)
            if members:
                found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, target))
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the modules of the package it imports (`from x import
    y`: the module `x.y` if there is one, else `x`)."""
    paths = {module_name(path): path for path in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets = {
            imported if imported in paths else imported.rsplit(".", 1)[0]
            for _, imported in imported_names(path, members=True)
        }
        graph[name] = {target for target in targets if target in paths and target != name}
    return graph


def import_path(graph: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """A chain of imports leading from `start` to `goal`, if there is one."""
    came_from: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        current = frontier.pop(0)
        if current == goal:
            chain = [current]
            while (previous := came_from[chain[-1]]) is not None:
                chain.append(previous)
            return chain[::-1]
        for target in sorted(graph.get(current, ())):
            if target not in came_from:
                came_from[target] = current
                frontier.append(target)
    return None


def is_nonebot(module: str) -> bool:
    """NoneBot itself or one of its plugins (the package's own absolute name excepted)."""
    top = module.split(".")[0]
    return top == "nonebot" or (top.startswith("nonebot_plugin_") and top != PACKAGE)


def test_no_module_is_over_400_lines() -> None:
    too_long = [
        f"{relative(path)}: {lines} lines"
        for path in modules()
        if (lines := len(source(path).splitlines())) > MAX_MODULE_LINES
    ]
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines: " + "; ".join(too_long)


def test_no_function_is_over_60_lines() -> None:
    too_long = [
        f"{relative(path)}:{node.lineno} {node.name}: {lines} lines"
        for path in modules()
        for node in ast.walk(syntax_tree(path))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (lines := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_FUNCTION_LINES
    ]
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: " + "; ".join(too_long)


def test_no_comment_is_a_section_header_banner() -> None:
    banners = [
        f"{relative(path)}:{line} {text.strip()}"
        for path in modules()
        for line, text in comments(path)
        if is_banner(text)
    ]
    assert not banners, "section-header banners (split the module instead): " + "; ".join(banners)


def test_the_llm_client_and_the_usage_meter_do_not_import_each_other() -> None:
    graph = import_graph()
    there = import_path(graph, LLM_MODULE, USAGE_MODULE)
    back = import_path(graph, USAGE_MODULE, LLM_MODULE)
    cycle = [" -> ".join(chain) for chain in (there, back) if chain] if there and back else []
    assert not cycle, "import cycle between engine/llm.py and engine/usage.py: " + "; ".join(cycle)


def test_the_engine_imports_no_nonebot() -> None:
    engine = PACKAGE_DIR / "engine"
    nonebot_imports = sorted(
        {
            f"{relative(path)}:{line} {module}"
            for path in sorted(engine.rglob("*.py"))
            for line, module in imported_names(path)
            if is_nonebot(module)
        }
    )
    assert not nonebot_imports, "engine/ imports NoneBot: " + "; ".join(nonebot_imports)
