# SPDX-License-Identifier: GPL-2.0-only
"""The suite checks itself: every case module proves that its oracle can fail.

The convention (``netns/variants.py``, README "Adding a case"): a case's test function is
parametrized with its good configuration(s) and at least one ``broken(...)`` parameter, a
strict xfail that only an AssertionError satisfies. This test reads the parametrization of
every ``tests/cases/test_*.py`` (without running anything) and fails for a module that has no
such variant, for a test function that has none and is not listed with its reason in the
module's ``ORACLES_NOT_PROVEN``, and for a broken parameter that is not strict, has no
reason, or stands alone in a function with no good configuration to share its oracle with.
"""

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TypeGuard

import pytest

from netns.variants import PREFIX, is_broken

CASES = Path(__file__).resolve().parents[1] / "cases"
MODULES = sorted(CASES.glob("test_*.py"))


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_oracle_check_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def _parameter_sets(function: object) -> Iterator[list[pytest.ParameterSet | object]]:
    """The argvalues of each @pytest.mark.parametrize on a test function."""
    for mark in getattr(function, "pytestmark", []):
        if isinstance(mark, pytest.Mark) and mark.name == "parametrize":
            yield list(mark.args[1] if len(mark.args) > 1 else mark.kwargs["argvalues"])


def _xfail(param: pytest.ParameterSet) -> pytest.Mark | None:
    return next(
        (
            m.mark if hasattr(m, "mark") else m
            for m in param.marks
            if getattr(m, "name", None) == "xfail"
        ),
        None,
    )


def _is_broken(value: object) -> TypeGuard[pytest.ParameterSet]:
    return isinstance(value, pytest.ParameterSet) and is_broken(value)


def broken_variants(module: ModuleType) -> dict[str, list[pytest.ParameterSet]]:
    """Test function name → its broken parameters, for functions that have any."""
    found: dict[str, list[pytest.ParameterSet]] = {}
    for name in dir(module):
        function = getattr(module, name)
        if not name.startswith("test") or not callable(function):
            continue
        for values in _parameter_sets(function):
            broken = [v for v in values if _is_broken(v)]
            if broken:
                good = [v for v in values if not _is_broken(v)]
                assert good, f"{name}: broken variants without a good configuration"
                found.setdefault(name, []).extend(broken)
    return found


def test_there_are_case_modules() -> None:
    assert len(MODULES) >= 10, MODULES


def _test_functions(module: ModuleType) -> list[str]:
    return [
        name for name in dir(module) if name.startswith("test") and callable(getattr(module, name))
    ]


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_case_module_has_a_strict_broken_variant(path: Path) -> None:
    check_case_module(path)


def check_case_module(path: Path) -> None:
    """Fail (AssertionError) unless the case module at *path* follows the convention; also
    used on the README's example case (tests/unit/test_readme_case.py)."""
    module = _load(path)
    variants = broken_variants(module)
    assert variants, (
        f"{path.name}: no test function has a `broken(...)` parameter (id "
        f"{PREFIX}…): its oracle is never shown to fail"
    )
    exempt: dict[str, str] = getattr(module, "ORACLES_NOT_PROVEN", {})
    unproven = sorted(set(_test_functions(module)) - set(variants) - set(exempt))
    assert not unproven, (
        f"{path.name}: {', '.join(unproven)} has no broken variant; add one, "
        f"or list it with the reason in ORACLES_NOT_PROVEN"
    )
    stale = sorted(name for name in exempt if name in variants or not hasattr(module, name))
    assert not stale, f"{path.name}: ORACLES_NOT_PROVEN lists {stale}, which need no entry"
    assert all(str(why).strip() for why in exempt.values()), f"{path.name}: an empty reason"
    for name, params in variants.items():
        for param in params:
            xfail = _xfail(param)
            assert xfail is not None, f"{name}[{param.id}] is not marked xfail"
            assert xfail.kwargs.get("strict") is True, f"{name}[{param.id}] is not strict"
            assert xfail.kwargs.get("raises") is AssertionError, (
                f"{name}[{param.id}]: only the oracle's AssertionError may satisfy it"
            )
            assert str(xfail.kwargs.get("reason", "")).strip(), f"{name}[{param.id}]: no reason"


def test_the_check_catches_a_module_without_broken_variant(tmp_path: Path) -> None:
    """The self-check itself can fail: a module whose 'broken' twin is a plain parameter."""
    source = tmp_path / "test_c99_example.py"
    source.write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('on', [True, False])\n"
        "def test_c99(on):\n"
        "    assert on or not on\n"
    )
    assert broken_variants(_load(source)) == {}
    source.write_text(
        "import pytest\n"
        "from netns.variants import broken\n"
        "@pytest.mark.parametrize('on', [True, broken(False, id='off', why='off is off')])\n"
        "def test_c99(on):\n"
        "    assert on\n"
    )
    assert list(broken_variants(_load(source))) == ["test_c99"]
