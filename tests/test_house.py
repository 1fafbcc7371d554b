"""The shape of the package, checked by reading its source (``ast``), not by running it.

* imports flow one way: no cycle between modules, lazy imports inside functions included, and
  no import from a higher layer (``cli -> demo -> bench -> stochsvm -> distributed / io ->
  registry -> families -> datasets -> _core``); the families never import one another;
* no module imports a private name (``_name``) of another, and benchmarks import no tests;
* no module reads or writes a private attribute of another object beyond the listed ones
  (:data:`PRIVATE_ATTRIBUTE_ACCESSES`, a count that only goes down);
* no compiled (numba) function takes more than 12 parameters;
* no module is over 800 lines.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "stochsvm"
BENCHMARKS = ROOT / "benchmarks"

#: layer of each top-level part of the package: a module imports from its own part or from a
#: part of a lower layer. Parts of one layer (the three families) never import one another.
LAYERS = {
    "_core": 0, "version": 0,
    "datasets": 1,
    "linear": 2, "kernel": 2, "semi": 2,
    "registry": 3,
    "io": 4, "distributed": 4,
    "stochsvm": 5,  # the package's own __init__: the public facade
    "bench": 6,
    "demo": 7,
    "cli": 8,
    "__main__": 9,
}

MAXIMUM_LINES = 800
MAXIMUM_COMPILED_PARAMETERS = 12


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _package_modules():
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(path, name, modules):
    """``(module imported, names imported from it)`` for every import in the file, at any
    depth (imports inside functions count: a lazy import is still a dependency)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.append((submodule if submodule in modules else target, alias.name))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names)
    return found


def _part(module):
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else pieces[0]


@pytest.fixture(scope="module")
def graph():
    modules = _package_modules()
    edges = {name: set() for name in modules}
    names = {name: [] for name in modules}
    for name, path in modules.items():
        for target, imported in _imports(path, name, modules):
            if target in modules and target != name:
                edges[name].add(target)
            names[name].append((target, imported))
    return modules, edges, names


def _cycles(edges):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle(graph):
    _, edges, _ = graph
    assert _cycles(edges) == []


def test_imports_flow_down_the_layers(graph):
    modules, edges, _ = graph
    assert {_part(name) for name in modules} <= set(LAYERS), "a new part needs a layer"
    upward = []
    for name, targets in edges.items():
        for target in targets:
            source_part, target_part = _part(name), _part(target)
            if source_part != target_part and LAYERS[target_part] >= LAYERS[source_part]:
                upward.append(f"{name} -> {target}")
    assert upward == []


def _private_imports(names, modules):
    found = []
    for name, imports in names.items():
        for target, imported in imports:
            if imported is None or not target.startswith("stochsvm"):
                continue
            private = imported.startswith("_") and not imported.startswith("__")
            if private and f"{target}.{imported}" not in modules:
                found.append(f"{name}: from {target} import {imported}")
    return found


def test_no_private_name_imported_across_modules(graph):
    modules, _, names = graph
    assert _private_imports(names, modules) == []


def test_benchmarks_import_no_tests_and_no_private_names():
    modules = _package_modules()
    found = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        for target, imported in _imports(path, f"benchmarks.{path.stem}", modules):
            if target == "tests" or target.startswith("tests."):
                found.append(f"{path.name}: imports {target}")
            if (imported and target.startswith("stochsvm") and imported.startswith("_")
                    and not imported.startswith("__")
                    and f"{target}.{imported}" not in modules):
                found.append(f"{path.name}: from {target} import {imported}")
    assert found == []


def _is_compiled(function):
    for decorator in function.decorator_list:
        call = decorator.func if isinstance(decorator, ast.Call) else decorator
        text = ast.unparse(call)
        if text.split(".")[-1] in ("njit", "jit", "vectorize", "guvectorize"):
            return True
    return False


def test_compiled_functions_take_few_parameters():
    wide = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and _is_compiled(node):
                arguments = node.args
                count = len(arguments.posonlyargs) + len(arguments.args) + len(
                    arguments.kwonlyargs)
                if count > MAXIMUM_COMPILED_PARAMETERS:
                    wide.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({count})")
    assert wide == []


def test_no_module_over_800_lines():
    long = [f"{path.relative_to(ROOT)} ({count})" for path in sorted(PACKAGE.rglob("*.py"))
            if (count := len(path.read_text().splitlines())) > MAXIMUM_LINES]
    assert long == []


def test_no_control_character_in_the_sources():
    r"""A backslash escape in a docstring that is not raw (``"\frac"``, ``"\top"``, ``"\bar"``)
    becomes a control character (form feed, tab, backspace): the sources and docs hold none."""
    control = {"\t", "\x0b", "\x0c", "\x08", "\x07", "\r"}
    paths = [path for folder in (PACKAGE, BENCHMARKS, ROOT / "tests", ROOT / "docs")
             for pattern in ("*.py", "*.rst", "*.md") for path in sorted(folder.rglob(pattern))]
    found = [f"{path.relative_to(ROOT)}:{number}" for path in paths
             for number, line in enumerate(path.read_text().split("\n"), start=1)
             if control & set(line)]
    assert found == []


#: the length of a repeated block of code that the package may not hold twice
REPEATED_BLOCK_LINES = 16


def _code_lines(path):
    """``(line number, text)`` of the code of ``path``: docstrings, comments, blank lines,
    imports and the ``self.name = name`` lines of an ``__init__`` (which stores its
    parameters verbatim, as the scikit-learn contract asks) left out; white space folded."""
    source = path.read_text()
    tree = ast.parse(source)
    skipped = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant) and isinstance(
                body[0].value.value, str):
            skipped.update(range(body[0].lineno, body[0].end_lineno + 1))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            skipped.update(range(node.lineno, node.end_lineno + 1))
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Attribute)
                and isinstance(node.targets[0].value, ast.Name)
                and node.targets[0].value.id == "self" and isinstance(node.value, ast.Name)
                and node.value.id == node.targets[0].attr):
            skipped.add(node.lineno)
    lines = []
    for number, text in enumerate(source.splitlines(), start=1):
        folded = " ".join(text.split())
        if number in skipped or not folded or folded.startswith("#"):
            continue
        if folded in (")", "]", "}", "):", "],", "},", "),"):
            continue
        lines.append((number, folded))
    return lines


def _repeated_blocks(paths, length):
    seen, repeated = {}, []
    for path in paths:
        lines = _code_lines(path)
        for start in range(len(lines) - length + 1):
            key = tuple(text for _, text in lines[start:start + length])
            place = (path.relative_to(ROOT), lines[start][0])
            first = seen.setdefault(key, place)
            if first != place and (not repeated or repeated[-1][1][0] != place[0]
                                   or place[1] - repeated[-1][1][1] > length):
                repeated.append((first, place))
    return [f"{a[0]}:{a[1]} ~ {b[0]}:{b[1]}" for a, b in repeated]


def test_the_block_finder_finds_a_repeated_block(tmp_path):
    body = "\n".join(f"    value_{i} = value_{i - 1} + {i}" for i in range(1, 20))
    (tmp_path / "a.py").write_text(f'def first(value_0):\n    """Doc."""\n{body}\n')
    (tmp_path / "b.py").write_text(f"def second(value_0):\n{body}\n    return value_19\n")
    global ROOT
    root, ROOT = ROOT, tmp_path
    try:
        found = _repeated_blocks([tmp_path / "a.py", tmp_path / "b.py"], REPEATED_BLOCK_LINES)
        assert len(found) == 1 and found[0].startswith("a.py:3 ~ b.py:2")
        assert _repeated_blocks([tmp_path / "a.py"], REPEATED_BLOCK_LINES) == []
    finally:
        ROOT = root


def test_no_block_of_code_repeated():
    assert _repeated_blocks(sorted(PACKAGE.rglob("*.py")), REPEATED_BLOCK_LINES) == []


def test_one_place_per_fact_the_registry_and_trainers_are_read_off_the_classes():
    # a solver is its class (with _paper and _aliases), exported by its family's __init__
    # and listed in docs/api.rst: the registry, the command line's table and the Dask
    # trainers follow from the classes
    from stochsvm import kernel, linear, registry, semi
    from stochsvm._core.base import BaseClassifier
    from stochsvm.distributed import TRAINERS

    exported = {name: getattr(family, name) for family in (linear, kernel, semi)
                for name in family.__all__}
    solvers = {name: cls for name, cls in exported.items()
               if isinstance(cls, type) and issubclass(cls, BaseClassifier)}
    assert solvers and set(registry.SOLVERS) == set(solvers)
    for name, cls in solvers.items():
        entry = registry.SOLVERS[name]
        assert entry.load() is cls
        assert entry.paper == cls._paper and entry.aliases == tuple(cls._aliases)
        assert entry.losses == tuple(cls._allowed_losses)
    forms = {}
    for name, cls in solvers.items():
        if cls._distributed_training is not None:
            forms.setdefault(cls._distributed_training, set()).add(name)
    assert {form: set(names) for form, names in TRAINERS.items()} == forms
    api = (ROOT / "docs" / "api.rst").read_text()
    assert [name for name in solvers if name not in api] == []


#: namedtuple methods, public API despite their underscore
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make"}
#: modules that still read or write a private attribute of an object they did not define
#: (``estimator._C``), with how many such accesses: a module may lose some, never gain one,
#: and no module joins. The goal is an empty mapping: fitted state crosses modules through
#: declared interfaces.
PRIVATE_ATTRIBUTE_ACCESSES = {
    "stochsvm/_core/base.py": 1,
    "stochsvm/_core/validation.py": 1,
    "stochsvm/cli/__init__.py": 1,
    "stochsvm/distributed/__init__.py": 3,
    "stochsvm/distributed/kernel.py": 9,
    "stochsvm/distributed/linear.py": 10,
    "stochsvm/distributed/semi.py": 10,
    "stochsvm/io.py": 3,
    "stochsvm/linear/training.py": 11,
}


def _private_attribute_accesses(path):
    """``name._attribute`` in the source of ``path``, ``name`` a variable other than
    ``self`` and ``cls`` (the object is another's), dunders and :data:`NAMEDTUPLE_API`
    excepted."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__") and node.attr not in NAMEDTUPLE_API
                and isinstance(node.value, ast.Name) and node.value.id not in ("self", "cls")):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_the_attribute_finder_finds_a_private_attribute(tmp_path):
    source = tmp_path / "module.py"
    source.write_text("def f(estimator, self):\n"
                      "    return estimator._C + self._gamma + estimator.__dict__.get(1)\n")
    assert _private_attribute_accesses(source) == ["estimator._C"]


def test_private_attributes_of_other_objects_only_where_listed():
    counts = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found = _private_attribute_accesses(path)
        if found:
            counts[path.relative_to(ROOT).as_posix()] = len(found)
    grown = {name: (count, PRIVATE_ATTRIBUTE_ACCESSES.get(name, 0))
             for name, count in counts.items()
             if count > PRIVATE_ATTRIBUTE_ACCESSES.get(name, 0)}
    assert grown == {}, "private attributes of another object, (now, allowed): " + str(grown)
