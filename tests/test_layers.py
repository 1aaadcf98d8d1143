"""The plugin's import graph, as docs/architecture.md draws it: every module stands on one
layer, imports only from its own layer or the ones below it, and no chain of imports comes
back to where it started. Every import counts, wherever it stands: inside a function, or
under `if TYPE_CHECKING:` (a type-only import is an arrow the reader follows all the same).

A message travels down the layers (matcher -> inbound -> conversation -> engine); the
stores and the outbound side receive what the layers above hand them, so they import the
types they receive (the engine's `Message`, the conversation's `Outcome`) and stand above
those types' modules, never above the modules that call them.

Each package has a face, its `__init__.py`, re-exporting what the rest of the plugin uses
from it (as nonebot2 re-exports `internal/`), and imports across packages go through it:
`from ..engine import LLMClient`, not `from ..engine.llm import LLMClient`. A face stands on
its package's layer, so it re-exports only the modules standing there; the few modules a
face cannot offer are listed below with the reason."""

from __future__ import annotations

from tests.test_code_shape import PACKAGE, import_graph, imported_names, module_name, modules

# From the top down; each layer is a list of modules and packages (a package takes in
# every module under it, unless a longer name is listed on another layer).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tools run by hand", ("migrate",)),
    ("NoneBot's entry: the plugin's face", ("",)),
    ("the web panel", ("panel",)),
    ("the panel's try page", ("trychat",)),
    ("composition root", ("runtime",)),
    (
        "what the composition root builds with",
        (
            "memory_and_chat_log",
            "conversation_and_commands",
            "prompt_budget",
            "startup_lines",
            "extensions",
        ),
    ),
    ("matcher", ("onebot.matcher",)),
    (
        "adapter: OneBot's outbound side",
        ("onebot.parts", "onebot.unknown_senders", "onebot.outbound"),
    ),
    ("adapter: OneBot's inbound side", ("onebot",)),
    ("conversation", ("conversation",)),
    ("features: the chat log", ("chatlog",)),
    ("features: long-term memory", ("memory",)),
    ("features: personas", ("personas",)),
    ("guard", ("guard",)),
    ("configuration", ("config", "providers")),
    ("media", ("media",)),
    ("what models read", ("prompts",)),
    ("what users read", ("texts",)),
    ("waiting for the database", ("deferred_start",)),
    ("opening a database", ("store.opening",)),
    ("what one database does differently", ("store.sqlite", "store.postgres")),
    ("stores, written once for both databases", ("store",)),
    ("scope keys", ("scopes",)),
    (
        "ground: the engine and plain helpers",
        ("engine", "text", "config_errors", "config_lists", "secret_masking", "tool_process"),
    ),
)


# Modules other packages import from themselves, not through their package's face, and why.
# A module standing on a layer above its package's face: the face cannot import it.
ABOVE_THE_FACE: dict[str, str] = {
    "store.opening": "picks a database, so it stands above store/sqlite and store/postgres",
    "onebot.matcher": "the matcher stands above the adapter's inbound side",
    "onebot.outbound": "the outbound side stands above the inbound side",
    "onebot.parts": "builds both sides, so it stands above the inbound side",
}
# A module loaded only when it is first used: the face, loaded with the plugin, would load
# it at start-up.
LOADED_WHEN_USED: dict[str, str] = {
    "store.copying": "only the migration tool copies a database",
    "panel.views.time_zone": "only once the panel is mounted",
    "panel.views.usage": "only once the panel is mounted",
    "trychat.chat": "only when the panel's try page is used",
    "trychat.clearing": "only when the panel's try page is used",
    "trychat.inbound": "only when the panel's try page is used",
}


def layer_of(module: str) -> int:
    """The index of the layer `module` stands on (0 is the top): the longest listed name
    that is the module or a package holding it decides."""
    relative = module.removeprefix(PACKAGE).removeprefix(".")
    best: tuple[int, int] | None = None
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            holds = name == "" or relative == name or relative.startswith(f"{name}.")
            if holds and (best is None or len(name) > best[0]):
                best = (len(name), index)
    if best is None:
        raise AssertionError(f"{module} stands on no layer: add it to LAYERS")
    return best[1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph[module]):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_every_module_stands_on_a_layer() -> None:
    unplaced = []
    for module in import_graph():
        try:
            layer_of(module)
        except AssertionError as error:
            unplaced.append(str(error))

    assert unplaced == []


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) -> {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in sorted(import_graph().items())
        for target in sorted(targets)
        if layer_of(target) < layer_of(module)
    ]

    assert upward == [], "imports running back up: " + "; ".join(upward)


def test_no_chain_of_imports_comes_back_to_where_it_started() -> None:
    assert cycles(import_graph()) == []


def test_the_stores_shared_by_both_databases_import_neither_databases_folder() -> None:
    shared = f"{PACKAGE}.store."
    backends = (f"{PACKAGE}.store.sqlite", f"{PACKAGE}.store.postgres")
    crossing = [
        f"{module} -> {target}"
        for module, targets in sorted(import_graph().items())
        if module.startswith(shared) and layer_of(module) == layer_of(f"{PACKAGE}.store.backend")
        for target in sorted(targets)
        if target.startswith(backends)
    ]

    assert crossing == []


def test_nothing_outside_the_stores_imports_one_databases_folder() -> None:
    store = f"{PACKAGE}.store"
    backends = (f"{store}.sqlite", f"{store}.postgres")
    outside = [
        f"{module} -> {target}"
        for module, targets in sorted(import_graph().items())
        if not module.startswith(f"{store}.")
        for target in sorted(targets)
        if target.startswith(backends)
    ]

    assert outside == []


def imports_past_a_face() -> list[tuple[str, int, str]]:
    """(module, line, imported module) of every import, wherever it stands, that takes a name
    from a module of another package instead of from that package's face. A package's own
    modules, its sub-packages' among them, import each other directly; so do the top-level
    modules, which belong to no package but the plugin's."""
    paths = {module_name(path): path for path in modules()}
    found = []
    for name, path in sorted(paths.items()):
        for line, target in imported_names(path):
            if target not in paths or paths[target].name == "__init__.py":
                continue
            package = target.rsplit(".", 1)[0]
            if package == PACKAGE or name == package or name.startswith(f"{package}."):
                continue
            found.append((name, line, target))
    return found


def test_imports_across_packages_go_through_the_package() -> None:
    listed = {f"{PACKAGE}.{module}" for module in ABOVE_THE_FACE | LOADED_WHEN_USED}
    past = [
        f"{module}:{line} -> {target}"
        for module, line, target in imports_past_a_face()
        if target not in listed
    ]

    assert past == [], "import these from the package's __init__.py: " + "; ".join(past)


def test_every_module_imported_past_its_face_still_is() -> None:
    imported = {target for _, _, target in imports_past_a_face()}
    stale = sorted(
        module
        for module in ABOVE_THE_FACE | LOADED_WHEN_USED
        if f"{PACKAGE}.{module}" not in imported
    )

    assert stale == [], "no longer imported past the face, so drop from the lists: " + ", ".join(
        stale
    )


def test_no_face_imports_what_it_cannot_offer() -> None:
    graph = import_graph()
    faces = [module_name(path) for path in modules() if path.name == "__init__.py"]
    pulled_in = [
        f"{face} -> {target}"
        for face in sorted(faces)
        if face != PACKAGE
        for target in sorted(graph[face])
        if target.removeprefix(f"{PACKAGE}.") in ABOVE_THE_FACE | LOADED_WHEN_USED
    ]

    assert pulled_in == [], "a face offering what it cannot: " + "; ".join(pulled_in)
