"""What the NoneBot plugin store checks, reproduced offline: the sdist and wheel hold the
package, README and LICENSE and nothing of the repository around them; the wheel declares
no NoneBot driver and pydantic 2; and the store's load test passes on the built wheel in a
fresh virtual environment that holds only the declared dependencies (taken from this
environment, no network): NoneBot's fake driver loads the plugin and reads its metadata,
and under the `~none` driver the plugin starts and stops writing nowhere but localstore's
directories.

The tests marked `packaging` are skipped only when no wheel can be built here (no `build`
front end, or a setuptools older than the build-system requires), with that reason."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - nonebot2 installs tomli before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "nonebot_plugin_aimemory"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
HOMEPAGE = PYPROJECT["project"]["urls"]["Homepage"]
# Not copied into the tree the packages are built from: version control, caches and
# virtual environments (large, and no sdist would pick them up anyway).
NOT_COPIED = (
    ".git",
    ".hypothesis",
    ".*_cache",
    ".benchmarks",
    "__pycache__",
    ".venv",
    "venv",
    "node_modules",
)
# Besides the package, what setuptools writes into every sdist (its metadata and config).
SDIST_TOP_LEVEL = {"LICENSE", "README.md", "PKG-INFO", "pyproject.toml", "setup.cfg", "MANIFEST.in"}
SDIST_EGG_INFO = {
    "PKG-INFO",
    "SOURCES.txt",
    "dependency_links.txt",
    "requires.txt",
    "top_level.txt",
}
DRIVER_MODULES = ("fastapi", "uvicorn", "websockets", "aiohttp", "quart")
USAGE_COMMANDS = (
    "~对话 状态",
    "清空",
    "停止",
    "~记忆 列表",
    "搜索 <词>",
    "删除 <编号>",
    "恢复 <编号>",
    "状态",
    "开启",
    "关闭",
    "间隔 <秒>",
    "立即生成",
    "~记忆 我的",
    "我的 删除/公开/私密 <编号>",
    "我的 清空",
    "~人设 列表",
    "当前",
    "切换 <名字>",
)

# noneflow's runner (src/providers/docker_test/templates/runner.py.jinja), printing the
# metadata instead of writing metadata.json, plus where the plugin module came from.
STORE_RUNNER = """\
import json

from nonebot import init, load_plugin, logger
from pydantic import BaseModel


class SetEncoder(json.JSONEncoder):
    def default(self, o):
        if isinstance(o, set):
            return list(o)
        return json.JSONEncoder.default(self, o)


init()
plugin = load_plugin("nonebot_plugin_aimemory")

if not plugin:
    exit(1)
else:
    if plugin.metadata:
        config = plugin.metadata.config
        metadata = {
            "name": plugin.metadata.name,
            "desc": plugin.metadata.description,
            "usage": plugin.metadata.usage,
            "type": plugin.metadata.type,
            "homepage": plugin.metadata.homepage,
            "supported_adapters": plugin.metadata.supported_adapters,
            "config": f"{config.__module__}.{config.__qualname__}" if config else None,
            "module_file": plugin.module.__file__,
        }
        print("METADATA " + json.dumps(metadata, cls=SetEncoder, ensure_ascii=False))

        if plugin.metadata.config and not issubclass(plugin.metadata.config, BaseModel):
            logger.error("插件配置项不是 Pydantic BaseModel 的子类")
            exit(1)
"""
# noneflow's fake driver (src/providers/docker_test/templates/fake.py.jinja): a server and
# client driver that serves and connects nothing.
FAKE_DRIVER = """\
from typing import Optional, Union
from collections.abc import AsyncGenerator
from nonebot import logger
from nonebot.drivers import (
    ASGIMixin,
    HTTPClientMixin,
    HTTPClientSession,
    HTTPVersion,
    Request,
    Response,
    WebSocketClientMixin,
)
from nonebot.drivers import Driver as BaseDriver
from nonebot.internal.driver.model import CookieTypes, HeaderTypes, QueryTypes
from typing_extensions import override


class Driver(BaseDriver, ASGIMixin, HTTPClientMixin, WebSocketClientMixin):
    @property
    @override
    def type(self) -> str:
        return "fake"

    @property
    @override
    def logger(self):
        return logger

    @override
    def run(self, *args, **kwargs):
        super().run(*args, **kwargs)

    @property
    @override
    def server_app(self):
        return None

    @property
    @override
    def asgi(self):
        raise NotImplementedError

    @override
    def setup_http_server(self, setup):
        raise NotImplementedError

    @override
    def setup_websocket_server(self, setup):
        raise NotImplementedError

    @override
    async def request(self, setup: Request) -> Response:
        raise NotImplementedError

    @override
    async def websocket(self, setup: Request) -> Response:
        raise NotImplementedError

    @override
    async def stream_request(
        self, setup: Request, *, chunk_size: int = 1024
    ) -> AsyncGenerator[Response, None]:
        raise NotImplementedError

    @override
    def get_session(
        self,
        params: QueryTypes = None,
        headers: HeaderTypes = None,
        cookies: CookieTypes = None,
        version: Union[str, HTTPVersion] = HTTPVersion.H11,
        timeout: Optional[float] = None,
        proxy: Optional[str] = None,
    ) -> HTTPClientSession:
        raise NotImplementedError
"""
# Load under `~none` (no server), run startup, stop a moment later, run shutdown.
START_AND_STOP = """\
import json

import anyio
import nonebot
from nonebot.adapters.onebot.v11 import Adapter

nonebot.init(driver="~none")
driver = nonebot.get_driver()
driver.register_adapter(Adapter)
plugin = nonebot.load_plugin("nonebot_plugin_aimemory")
assert plugin is not None, "the plugin did not load"
seen = {}


async def stop_soon():
    await anyio.sleep(0.5)
    driver.exit()


@driver.on_startup
async def after_the_plugin_started():
    seen["started"] = plugin.module.current_runtime() is not None
    seen["startup_failure"] = str(plugin.module.startup_failure() or "")
    driver.task_group.start_soon(stop_soon)


nonebot.run()
import nonebot_plugin_localstore as localstore  # loaded by the plugin's require()

seen["stopped"] = plugin.module.current_runtime() is None
seen["localstore"] = [
    str(localstore.BASE_DATA_DIR),
    str(localstore.BASE_CACHE_DIR),
    str(localstore.BASE_CONFIG_DIR),
]
print("RESULT " + json.dumps(seen, ensure_ascii=False))
"""


def build_blocker() -> str | None:
    """Why no wheel can be built in this environment, or None when one can."""
    try:
        importlib.metadata.version("build")
    except importlib.metadata.PackageNotFoundError:
        return "the `build` front end is not installed"
    for spec in PYPROJECT["build-system"]["requires"]:
        requirement = Requirement(spec)
        try:
            installed = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return f"the build backend requirement {spec} is not installed"
        if not requirement.specifier.contains(installed, prereleases=True):
            return f"the build backend needs {spec}, this environment has {installed}"
    return None


BUILD_BLOCKER = build_blocker()
needs_a_wheel = pytest.mark.skipif(
    BUILD_BLOCKER is not None,
    reason=f"cannot build a wheel here: {BUILD_BLOCKER} "
    '(python -m pip install ".[test]" installs what it needs)',
)


@dataclass(frozen=True)
class Built:
    sdist: Path
    wheel: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The sdist and the wheel, as `python -m build` makes them for an upload (the wheel
    from the unpacked sdist), from a copy of this tree with a `.env` and a data folder of
    a running bot in it, offline (no build isolation)."""
    base = tmp_path_factory.mktemp("build")
    tree = base / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(*NOT_COPIED), symlinks=True)
    (tree / ".env").write_text("AIMEMORY_API_KEY=sk-secret\n", encoding="utf-8")
    (tree / "data").mkdir(exist_ok=True)
    (tree / "data" / "aimemory.db").write_bytes(b"")
    out = base / "dist"
    run_checked(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
        cwd=base,
    )
    return Built(
        sdist=one(out.glob("*.tar.gz")),
        wheel=one(out.glob("*.whl")),
    )


@dataclass(frozen=True)
class StoreVenv:
    python: Path
    dependencies: frozenset[str]


@pytest.fixture(scope="module")
def store_venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> StoreVenv:
    """A fresh virtual environment (no system site-packages) with only the wheel's declared
    dependencies, and theirs, taken from this environment through a directory of links on
    a .pth line, and the wheel installed with pip, offline and without dependencies."""
    base = tmp_path_factory.mktemp("store-venv")
    venv = base / "venv"
    run_checked([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base)
    python = venv_python(venv)
    closure = dependency_closure(wheel_requirements(built.wheel))
    links = base / "dependencies"
    for distribution in closure:
        link_distribution(distribution, links)
    purelib = run_checked(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=base
    ).strip()
    (Path(purelib) / "store-dependencies.pth").write_text(f"{links}\n", encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--isolated"]
    run_checked([*pip, "install", "--no-deps", "--no-index", str(built.wheel)], cwd=base)
    return StoreVenv(
        python=python,
        dependencies=frozenset(canonical(d.metadata["Name"]) for d in closure),
    )


@pytest.mark.packaging
@needs_a_wheel
def test_the_sdist_holds_the_package_readme_and_licence_only(built: Built) -> None:
    top = f"nonebot_plugin_aimemory-{VERSION}/"
    with tarfile.open(built.sdist) as sdist:
        names = [m.name for m in sdist.getmembers() if m.isfile()]

    assert all(name.startswith(top) for name in names), names
    files = {name.removeprefix(top) for name in names}
    outside = {
        name
        for name in files
        if name not in SDIST_TOP_LEVEL
        and not name.startswith(f"{PACKAGE}/")
        and name.removeprefix(f"{PACKAGE}.egg-info/") not in SDIST_EGG_INFO
    }
    assert outside == set()
    assert {"LICENSE", "README.md", f"{PACKAGE}/py.typed"} <= files
    assert {name for name in files if name.startswith(f"{PACKAGE}/")} == package_files()


@pytest.mark.packaging
@needs_a_wheel
def test_the_wheel_holds_the_package_py_typed_and_licence_only(built: Built) -> None:
    dist_info = f"nonebot_plugin_aimemory-{VERSION}.dist-info/"
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())

    assert {n for n in names if not n.startswith(dist_info)} == package_files()
    assert {n.removeprefix(dist_info) for n in names if n.startswith(dist_info)} == {
        "METADATA",
        "WHEEL",
        "RECORD",
        "top_level.txt",
        "licenses/LICENSE",
    }
    with zipfile.ZipFile(built.wheel) as wheel:
        licence = wheel.read(f"{dist_info}licenses/LICENSE").decode()
    assert "MIT License" in licence
    assert "nonebot-plugin-aimemory contributors" in licence


@pytest.mark.packaging
@needs_a_wheel
def test_the_wheel_declares_nonebot_without_a_driver_and_pydantic_2(built: Built) -> None:
    requirements = {canonical(r.name): r for r in wheel_requirements(built.wheel)}
    bot_extra = [
        r for r in wheel_requirements(built.wheel, extra="bot") if "extra" in str(r.marker)
    ]

    assert requirements["nonebot2"].extras == set()
    assert requirements["nonebot-adapter-onebot"].extras == set()
    assert not requirements["pydantic"].specifier.contains("1.10.13")
    assert requirements["pydantic"].specifier.contains("2.0")
    assert {"fastapi", "websockets", "httpx"} <= one(bot_extra).extras
    assert license_expression(built.wheel) == "MIT"
    # jieba's segmentation: rjieba where it has wheels, pure-Python jieba everywhere.
    declared = {
        canonical(r.name): r
        for r in map(Requirement, wheel_metadata(built.wheel).get_all("Requires-Dist") or [])
    }
    assert declared["jieba"].marker is None
    assert 'sys_platform == "win32"' in str(declared["rjieba"].marker)


@pytest.mark.packaging
@needs_a_wheel
def test_the_store_venv_has_the_declared_dependencies_and_no_driver(
    store_venv: StoreVenv,
) -> None:
    pip_check = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(store_venv.python), "--isolated", "check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    importable = run_checked(
        [
            str(store_venv.python),
            "-c",
            "import importlib.util, sys; "
            "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))",
            *DRIVER_MODULES,
        ],
        cwd=store_venv.python.parent,
    )

    assert pip_check.returncode == 0, pip_check.stdout + pip_check.stderr
    assert importable.split() == []
    assert {"nonebot2", "nonebot-adapter-onebot", "nonebot-plugin-localstore"} <= (
        store_venv.dependencies
    )
    assert set(DRIVER_MODULES).isdisjoint(store_venv.dependencies)


@pytest.mark.packaging
@needs_a_wheel
def test_the_store_load_test_reads_the_metadata_with_the_fake_driver(
    store_venv: StoreVenv, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text("DRIVER=fake\n", encoding="utf-8")
    (work / "fake.py").write_text(FAKE_DRIVER, encoding="utf-8")
    (work / "runner.py").write_text(STORE_RUNNER, encoding="utf-8")

    written, output = run_watched(store_venv, ["runner.py"], tmp_path, work)

    metadata = json.loads(output.split("METADATA ", 1)[1].splitlines()[0])
    assert metadata["name"] == "AI 记忆聊天"
    assert metadata["desc"]
    assert metadata["type"] == "application"
    assert metadata["homepage"] == HOMEPAGE
    assert metadata["supported_adapters"] == ["~onebot.v11"]
    assert metadata["config"] == f"{PACKAGE}.config.Config"
    assert all(command in metadata["usage"] for command in USAGE_COMMANDS)
    assert Path(metadata["module_file"]).is_relative_to(store_venv.python.parents[1])
    assert outside_localstore(written, localstore_dirs(tmp_path)) == []


@pytest.mark.packaging
@needs_a_wheel
def test_the_plugin_starts_and_stops_under_the_none_driver_writing_only_to_localstore(
    store_venv: StoreVenv, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "start_and_stop.py").write_text(START_AND_STOP, encoding="utf-8")

    written, output = run_watched(store_venv, ["start_and_stop.py"], tmp_path, work)

    result = json.loads(output.split("RESULT ", 1)[1].splitlines()[0])
    assert result["started"] is True, output[-3000:]
    assert result["startup_failure"] == ""
    assert result["stopped"] is True
    reported = [Path(path) for path in result["localstore"]]
    assert all(path.is_relative_to(tmp_path / "home") for path in reported), reported
    assert any(path.name == "aimemory.db" for path in written)  # it did write, there
    assert outside_localstore(written, reported) == []


def test_the_metadata_lists_every_command_for_the_store_page() -> None:
    import nonebot

    plugin = nonebot.get_plugin("nonebot_plugin_aimemory")
    assert plugin is not None
    assert plugin.metadata is not None
    from nonebot_plugin_aimemory.config import Config

    metadata = plugin.metadata
    assert metadata.type == "application"
    assert metadata.homepage == HOMEPAGE
    assert metadata.config is Config
    assert metadata.supported_adapters == {"~onebot.v11"}
    missing = [command for command in USAGE_COMMANDS if command not in metadata.usage]
    assert missing == []


# ------------------------------------------------------------------------------- helpers


def run_checked(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command; its standard output, or a failure showing both streams."""
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def one(paths: Iterable[Path]) -> Path:
    found = list(paths)
    assert len(found) == 1, found
    return found[0]


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def venv_python(venv: Path) -> Path:
    windows = venv / "Scripts" / "python.exe"
    return windows if windows.exists() else venv / "bin" / "python"


def package_files() -> set[str]:
    """The package as it is in this tree: its modules and py.typed, no caches."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / PACKAGE).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def wheel_metadata(wheel: Path) -> importlib.metadata.PackageMetadata:
    from email import message_from_bytes

    with zipfile.ZipFile(wheel) as archive:
        name = one(Path(n) for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return message_from_bytes(archive.read(name.as_posix()))  # type: ignore[return-value]


def license_expression(wheel: Path) -> str | None:
    return wheel_metadata(wheel).get("License-Expression")


def wheel_requirements(wheel: Path, extra: str = "") -> list[Requirement]:
    """The wheel's Requires-Dist that apply here without extras (or with `extra`)."""
    requirements = [Requirement(r) for r in wheel_metadata(wheel).get_all("Requires-Dist") or []]
    return [r for r in requirements if not r.marker or r.marker.evaluate({"extra": extra})]


def dependency_closure(
    requirements: list[Requirement],
) -> list[importlib.metadata.Distribution]:
    """The installed distributions these requirements need, with what they need in turn
    (markers and requested extras applied); each must be installed here in a version the
    requirement accepts."""
    found: dict[str, importlib.metadata.Distribution] = {}
    extras_done: set[tuple[str, str]] = set()
    pending = [(requirement, "") for requirement in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonical(requirement.name)
        try:
            distribution = found.get(name) or importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            pytest.fail(f"{requirement} is declared but not installed here")
        version = distribution.version
        assert requirement.specifier.contains(version, prereleases=True), (requirement, version)
        for wanted in {"", *requirement.extras}:
            if (name, wanted) in extras_done:
                continue
            extras_done.add((name, wanted))
            pending.extend((Requirement(r), wanted) for r in distribution.requires or [])
        found[name] = distribution
    return list(found.values())


def link_distribution(distribution: importlib.metadata.Distribution, links: Path) -> None:
    """Link each installed file of `distribution` (its RECORD) into `links`, as laid out
    in site-packages; scripts and caches stay out."""
    site = Path(str(distribution.locate_file(""))).resolve()
    assert distribution.files is not None, f"{distribution.metadata['Name']} has no RECORD"
    for file in distribution.files:
        source = Path(str(distribution.locate_file(file))).resolve()
        if not source.is_relative_to(site) or "__pycache__" in source.parts:
            continue
        if not source.is_file():
            continue
        target = links / source.relative_to(site)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(source)


def clean_environment(root: Path) -> dict[str, str]:
    """A bare environment for the venv's Python, every per-user directory in `root`: no
    PYTHONPATH, no AIMEMORY_* or LOCALSTORE_* of the outer test run."""
    home, temp = root / "home", root / "tmp"
    home.mkdir(exist_ok=True)
    temp.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "USERPROFILE": str(home),
        "TMPDIR": str(temp),
        "TEMP": str(temp),
        "TMP": str(temp),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "LANG": "C.UTF-8",
    }


def snapshot(roots: Iterable[Path]) -> dict[Path, tuple[int, int]]:
    """Every file and folder under `roots` with its size and modification time."""
    entries: dict[Path, tuple[int, int]] = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            if path.exists() or path.is_symlink():
                status = path.lstat()
                entries[path] = (status.st_size if path.is_file() else 0, status.st_mtime_ns)
    return entries


def run_watched(
    venv: StoreVenv, script: list[str], root: Path, work: Path
) -> tuple[list[Path], str]:
    """Run `script` with the venv's Python in `work`, HOME and TMPDIR inside `root`; the
    files created or changed under `root` and the venv meanwhile, and the output."""
    environment = clean_environment(root)
    watched = [root, venv.python.parents[1]]
    before = snapshot(watched)
    done = subprocess.run(
        [str(venv.python), *script],
        cwd=work,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    after = snapshot(watched)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    changed = [
        path
        for path, state in after.items()
        if before.get(path) != state and not (path.is_dir() and path in before)
    ]
    return changed, output


def localstore_dirs(root: Path) -> list[Path]:
    """Where localstore keeps data, cache and config for a HOME of `root / "home"` when no
    LOCALSTORE_* or XDG_* is set (Linux and macOS layouts)."""
    home = root / "home"
    return [
        home / ".local" / "share" / "nonebot2",
        home / ".cache" / "nonebot2",
        home / ".config" / "nonebot2",
        home / "Library" / "Application Support" / "nonebot2",
        home / "Library" / "Caches" / "nonebot2",
    ]


def outside_localstore(written: Iterable[Path], allowed: list[Path]) -> list[Path]:
    """What was written neither inside one of the `allowed` directories nor on the way to
    one (their parent folders are created with them)."""
    resolved = [path.resolve() for path in allowed]
    return sorted(
        path
        for path in written
        if not any(path.resolve().is_relative_to(folder) for folder in resolved)
        and not (
            path.is_dir() and any(folder.is_relative_to(path.resolve()) for folder in resolved)
        )
    )
