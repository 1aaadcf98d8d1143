"""The plugin's import graph, as docs/architecture.md draws it: every module stands on one
layer, imports only from its own layer or the ones below it, and no chain of imports comes
back to where it started. Every import counts, wherever it stands: inside a function, or
under `if TYPE_CHECKING:` (a type-only import is an arrow the reader follows all the same).

A message travels down the layers (matcher -> inbound -> conversation -> engine); the
stores and the outbound side receive what the layers above hand them, so they import the
types they receive (the engine's `Message`, the conversation's `Outcome`) and stand above
those types' modules, never above the modules that call them."""

from __future__ import annotations

from tests.test_code_shape import PACKAGE, import_graph

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
