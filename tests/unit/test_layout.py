# SPDX-License-Identifier: GPL-2.0-only
"""The folder layout is the architecture: each package imports only packages below it.

Why a test: a cycle between packages hides until a refactor trips over it (the old
loop from the kernel fetcher through the source-build package back to the fetcher was found
by hand). Every import is counted, lazy ones inside functions included, because a lazy import
is still a dependency.
"""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Bottom to top. A module may import its own package and anything listed before it.
LAYERS = [
    "netregress",  # naming, the process core, the error root, the plugins' shared facts
    "netns",  # the namespace library
    "packetdrill",  # the engine (uses the library only in its pytest plugin): a leaf
    "evidence",  # plots, trace diffs, failure pages: on top of the library and the engine
    "kernels",  # errors, paths, progress, tools shared by the kernel packages
    "kernels.acquire",
    "kernels.vm",
    "kernels.matrix",
    "kernels.report",
    "kernels.corpus",  # the kernel's own packetdrill selftests: acquired, then as items
    "kernels.selftests",  # the kernel's own network shell selftests: acquired, built, as items
    "kernels.cli",
    "kernels.ci",  # the generated CI workflows run for real (scripts/ci-local)
    "kernels.bisect",
    "kernels.mutation",  # mutation campaigns: builds (acquire) judged by runs (bisect.vmtest)
    "kernels.pytest_plugin",
    "conformance",  # a tool over the engine and the kernels (runs in guests, learns runners)
]


def _layer(module: str) -> str:
    """The most specific entry of LAYERS that `module` belongs to."""
    matches = [name for name in LAYERS if module == name or module.startswith(name + ".")]
    return max(matches, key=len)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in `path`, relative ones resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
    return found


def _sources() -> list[Path]:
    roots = {name.split(".")[0] for name in LAYERS}
    return sorted(p for root in roots for p in (ROOT / root).rglob("*.py"))


def test_every_package_imports_only_packages_below_it() -> None:
    rank = {name: index for index, name in enumerate(LAYERS)}
    roots = {name.split(".")[0] for name in LAYERS}
    upward = []
    for path in _sources():
        src = _layer(_module_name(path))
        for line, target in _imports(path):
            if target.split(".")[0] not in roots:
                continue
            dst = _layer(target)
            if dst != src and rank[dst] > rank[src]:
                upward.append(f"{path.relative_to(ROOT)}:{line}: {src} imports {target}")
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


# The base's one module that may import pytest: the facts the plugins share (stash keys and
# hook specifications are pytest types). Only plugins import it, inside a loaded pytest.
PLUGIN_FACTS = "netregress.session"


def test_the_base_package_needs_only_the_standard_library() -> None:
    """The engine's child process and every CLI start from here; a third-party import would
    cost each of them its start-up time (pyroute2, scapy). The plugins' facts may import
    pytest, and no other module of the base may import them."""
    allowed = set(sys.stdlib_module_names) | {"netregress"}
    foreign = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for path in sorted((ROOT / "netregress").rglob("*.py"))
        for line, target in _imports(path)
        if (
            target.split(".")[0] not in allowed
            and not (_module_name(path) == PLUGIN_FACTS and target.split(".")[0] == "pytest")
        )
        or (target == PLUGIN_FACTS and _module_name(path) != PLUGIN_FACTS)
    ]
    assert not foreign, "\n".join(foreign)


def _module_files() -> dict[str, Path]:
    return {_module_name(path): path for path in _sources()}


def _module_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the modules of ours it imports, every import counted (at the top, inside a
    function, under `if TYPE_CHECKING:`): each is a dependency, whether Python runs it at import
    time or later. `from package import name` points at the module `package.name` when there is
    one, else at the package's `__init__` (a face that re-exports names ties through it)."""
    edges: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                if node.level:
                    parts = package.split(".")
                    base = parts[: len(parts) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                    for alias in node.names
                ]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    edges[module].add(target)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_through_others() -> None:
    """Layers between packages are not enough: two files of one package that import each
    other (one of them lazily, or only for type checking) cannot be understood, tested or
    moved apart. Break a circle by moving the shared piece down, not by hiding the import."""
    cycles = _cycles(_module_edges(_module_files()))
    assert not cycles, "import circles:\n" + "\n".join(" ⇄ ".join(c) for c in cycles)


def test_the_circle_finder_finds_a_circle_and_only_that() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
