"""The layers: the engine knows nothing above it, and the visuals read only the record schema.

So a saved trace can be read, checked and drawn on a machine with no torch and no model, and
the engine can be used as a library with no user interface. Checked two ways: what a fresh
interpreter loads (torch and transformers must stay out), and what each module's source imports.
The scripts import nothing from tests/: what both use (serving the app, driving chromium) is in
scripts/serving.py.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "transformers")
PROJECT = ("lab", "lookahead_core", "visuals", "ui", "scripts")


def loaded_after(code: str) -> set[str]:
    """The heavy modules a fresh interpreter has loaded after running `code` from the repository root."""
    probe = f"{code}\nimport sys\nprint(' '.join(name for name in {HEAVY!r} if name in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def test_every_records_and_visuals_module_loads_without_torch():
    code = (
        "import pkgutil, importlib\n"
        "import lookahead_core.records, visuals\n"
        "for package in (lookahead_core.records, visuals):\n"
        "    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(module.name)"
    )
    assert loaded_after(code) == set()


def test_visuals_do_not_import_torch_or_gradio():
    code = (
        "import sys, visuals.replay, visuals.summary, visuals.library, visuals.palette, visuals.race, "
        "visuals.plans; bad = {'torch', 'gradio', 'transformers'} & set(sys.modules); assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_importing_the_engine_package_alone_loads_no_torch():
    assert loaded_after("import lookahead_core") == set()


def imported_modules(path: Path) -> set[str]:
    """Every absolute module `path` imports; `from package import name` counts as package.name."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "lookahead_core":
            names |= {f"lookahead_core.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
    return names


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", modules("lookahead_core"), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_engine_module_imports_the_layers_above_it(path):
    above = {"visuals", "lab", "app", "gradio", "plotly"}
    offending = {name for name in imported_modules(path) if name.split(".")[0] in above}
    assert not offending, f"{path.name} imports {sorted(offending)}"


@pytest.mark.parametrize("path", modules("visuals"), ids=lambda p: p.name)
def test_visuals_read_only_the_record_schema_of_the_engine(path):
    engine = {name for name in imported_modules(path) if name.split(".")[0] == "lookahead_core"}
    beyond = {name for name in engine if name.split(".")[:2] != ["lookahead_core", "records"]}
    assert not beyond, f"{path.name} imports {sorted(beyond)}"


@pytest.mark.parametrize(
    "path", [*modules("visuals"), *modules("lab"), ROOT / "app.py"], ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_text_enters_html_in_one_place(path):
    """Only visuals/markup.py escapes: every other module builds its HTML around what markup.escape returns."""
    if path != ROOT / "visuals" / "markup.py":
        assert "html" not in imported_modules(path), f"{path.name} escapes on its own: use visuals.markup.escape"


@pytest.mark.parametrize("path", modules("scripts"), ids=lambda p: p.name)
def test_no_script_imports_the_tests(path):
    """The scripts share code with the tests through scripts/serving.py, never by reaching into tests/."""
    offending = {name for name in imported_modules(path) if name.split(".")[0] == "tests"}
    assert not offending, f"{path.name} imports {sorted(offending)}"


@pytest.mark.parametrize("path", modules("scripts"), ids=lambda p: p.name)
def test_every_name_a_script_imports_from_the_project_exists(path):
    """A script no test runs (the GPU check, the bench plot) must still import: a renamed function breaks it."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PROJECT:
            module = importlib.import_module(node.module)
            missing = [
                alias.name
                for alias in node.names
                if not hasattr(module, alias.name) and importlib.util.find_spec(f"{node.module}.{alias.name}") is None
            ]
            assert not missing, f"{path.name}: {node.module} has no {', '.join(missing)}"


def project_modules() -> dict[str, Path]:
    """Every module of the house by its dotted name (a package by its own name), app.py as `app`."""
    found = {"app": ROOT / "app.py"}
    for package in PROJECT:
        for path in modules(package):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_arrows(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` imports anywhere in its source (inside a function, or only for
    type checking, counts too): `from package import module` points at the module, `from module import name` at
    the module."""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    arrows = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            arrows |= {alias.name for alias in node.names} & known
        elif isinstance(node, ast.ImportFrom):
            start = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join([*start, *([node.module] if node.module else [])])
            for alias in node.names:
                arrows |= {f"{module}.{alias.name}"} & known or {module} & known
    return arrows - {name}


def import_circles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, round a circle (Tarjan's strongly connected components of two
    or more)."""
    order, low, stack, circles = {}, {}, [], []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in arrows[module]:
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            group = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(arrows):
        if module not in order:
            visit(module)
    return circles


def test_no_two_modules_import_each_other_round_a_circle():
    found = project_modules()
    arrows = {name: import_arrows(name, path, set(found)) for name, path in found.items()}
    assert sum(map(len, arrows.values())) > 300  # the arrows were read: a parser that finds none finds no circle
    assert import_circles(arrows) == []


def test_the_circle_check_finds_a_circle_through_a_lazy_import(tmp_path):
    (tmp_path / "one.py").write_text("from .two import job\n")
    (tmp_path / "two.py").write_text("def job():\n    from .one import thing\n")
    (tmp_path / "three.py").write_text("from . import one\n")
    known = {"pkg.one", "pkg.two", "pkg.three"}
    arrows = {name: import_arrows(name, tmp_path / f"{name[4:]}.py", known) for name in known}
    assert import_circles(arrows) == [["pkg.one", "pkg.two"]]


# lab's rooms, each above the ones it may import: the server's and the tools' rooms over measuring and training
ROOMS_BELOW = {
    "measure": set(),
    "train": {"measure"},
    "serve": {"measure", "train"},
    "tools": {"measure", "train", "serve"},
}


@pytest.mark.parametrize("room", sorted(ROOMS_BELOW))
def test_each_room_of_lab_imports_only_the_rooms_below_it(room):
    """A room imports its own modules and the rooms below it, never lab's CLI at the root."""
    allowed = {f"lab.{below}" for below in {room, *ROOMS_BELOW[room]}}
    for path in modules(f"lab/{room}"):
        reached = {name for name in imported_modules(path) if name.split(".")[0] == "lab"}
        offending = {name for name in reached if ".".join(name.split(".")[:2]) not in allowed}
        assert not offending, f"{path.relative_to(ROOT)} imports {sorted(offending)}"


LONGEST_FUNCTION = 60  # lines, its docstring included


@pytest.mark.parametrize("package", [*PROJECT, "app.py"])
def test_no_function_outside_the_tests_runs_past_60_lines(package):
    """A function that grew past a screen does several things: each is a function of its own, named for it."""
    paths = [ROOT / package] if package.endswith(".py") else modules(package)
    longer = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in paths
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > LONGEST_FUNCTION
    ]
    assert not longer, longer


# What settles a decoding, and who may ask (issue 62): trace.settle is the one caller of Runtime.settled (the auto
# settings' W, N, G) and of Runtime.in_mode (the step mode of a runtime that came unsettled); the step mode asked of
# fixed.chosen_mode by in_mode and by costs.settled_mode alone (a held model's, a command's or a check's mode, settled
# once with its curve and carried down), and a curve read by settled_mode and the SettledMode it made alone.
SETTLING = {
    "settled": {("lookahead_core/trace.py", "settle")},
    "in_mode": {("lookahead_core/trace.py", "settle")},
    "chosen_mode": {("lookahead_core/runtime.py", "in_mode"), ("lookahead_core/costs.py", "settled_mode")},
    "step_costs": {("lookahead_core/costs.py", "settled_mode"), ("lookahead_core/costs.py", "costs")},
}


def callers(tree: ast.AST, where: str) -> dict[str, set[tuple[str, str]]]:
    """For each name of SETTLING, the functions of a module (its path `where`) that call a function or a method so
    named, in one walk of each function."""
    found: dict[str, set[tuple[str, str]]] = {name: set() for name in SETTLING}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                called = node.func if isinstance(node, ast.Call) else None
                name = getattr(called, "attr", None) or getattr(called, "id", None)
                if name in found:
                    found[name].add((where, function.name))
    return found


def settling_callers(paths: list[Path]) -> dict[str, set[tuple[str, str]]]:
    """For each name of SETTLING, the (module's path from the root, function) pairs among `paths` that call it."""
    found: dict[str, set[tuple[str, str]]] = {name: set() for name in SETTLING}
    for path in paths:
        where = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name)
        for name, pairs in callers(ast.parse(path.read_text()), where).items():
            found[name] |= pairs
    return found


def test_a_decodings_settings_and_mode_are_settled_in_one_place():
    paths = [ROOT / "app.py", *(path for package in PROJECT for path in modules(package))]
    found = settling_callers(paths)
    assert found == SETTLING


def test_the_settling_check_finds_a_race_that_settles_its_own_request(tmp_path):
    racing = tmp_path / "race.py"
    racing.write_text("def racing(request, runtime):\n    return runtime.settled(request)\n")
    found = settling_callers([ROOT / "lookahead_core" / "trace.py", racing])
    assert found["settled"] == SETTLING["settled"] | {("race.py", "racing")}


def test_the_settling_check_finds_a_server_that_asks_the_mode_itself(tmp_path):
    serving = tmp_path / "server.py"
    serving.write_text("def record(lm):\n    return chosen_mode(lm, None)\n")
    found = settling_callers([ROOT / "lookahead_core" / "costs.py", serving])
    assert found["chosen_mode"] == {("lookahead_core/costs.py", "settled_mode"), ("server.py", "record")}
