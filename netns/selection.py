# SPDX-License-Identifier: GPL-2.0-only
"""``-m`` and ``-k`` checked once, in the process that starts the workers, before any starts.

Why here and not left to pytest: pytest parses the expressions while it deselects, after
collection, which under xdist happens in every worker. A malformed expression then breaks each
worker's collection on its own, and the controller, seeing workers that disagree on what they
collected, dies of an INTERNALERROR naming a test (``assert not '…c01….pkt::ipv4'``) instead of
the expression. ``scripts/netregress`` runs with ``-n 2``, so that was every user's first typo.

Under ``strict_markers`` (this project's pytest configuration) a name in ``-m`` that no plugin
registered is an error too, listing the names that are: otherwise ``-m tpc`` selects nothing
and says nothing. pytest checks that as well, but again only after collection, in the workers.
The markers a plugin registers while it collects are known only then; every plugin of ours
registers its markers when it is configured (the kernel corpus's feature names included).
"""

from collections.abc import Iterable
from difflib import get_close_matches

import pytest

# pytest's own match-expression parser: the selection is judged by the very grammar that later
# applies it. No public name exports it.
from _pytest.mark.expression import Expression


def _compiled(option: str, text: str) -> Expression:
    """`text` parsed as pytest will parse it; a syntax error is pytest's own usage error."""
    try:
        return Expression.compile(text)
    except SyntaxError as err:
        # pytest's wording, so that -n 0 (where pytest says it) and -n 2 read alike.
        raise pytest.UsageError(
            f"Wrong expression passed to '{option}': {err.text}: at column {err.offset}: {err.msg}"
        ) from None


def unknown_markers(
    expression: Expression, registered: Iterable[str], subsystems: Iterable[str]
) -> str | None:
    """The one-line complaint about names in a ``-m`` expression nobody registered (None: all
    are known): each with the nearest known name, then the subsystem markers, then the rest."""
    known = sorted(set(registered))
    unknown = sorted(expression.idents() - set(known))
    if not unknown:
        return None
    guesses = [_with_guess(name, known) for name in unknown]
    ours = [name for name in subsystems if name in known]
    others = [name for name in known if name not in ours]
    return (
        f"Unknown marker in '-m' expression: {', '.join(guesses)}. "
        f"Subsystem markers: {', '.join(ours)}; the other registered markers: "
        f"{', '.join(others)} (pytest --markers describes each)"
    )


def _with_guess(name: str, known: list[str]) -> str:
    """`name`, and the known name nearest to it, if any is near: `tpc` → `tcp`."""
    close = get_close_matches(name, known, 1)
    return f"{name} (did you mean {close[0]}?)" if close else name


def _registered(config: pytest.Config) -> list[str]:
    """The names of the markers registered so far (``name(args): what it is`` lines)."""
    lines: list[str] = config.getini("markers")
    return [line.split(":", 1)[0].split("(", 1)[0].strip() for line in lines]


def _strict_markers(config: pytest.Config) -> bool:
    """pytest's own rule: ``strict_markers``, else the umbrella ``strict``."""
    strict = config.getini("strict_markers")
    return bool(config.getini("strict") if strict is None else strict)


def check(config: pytest.Config, subsystems: Iterable[str]) -> None:
    """Raise pytest's usage error (exit status 4) for a malformed ``-m``/``-k`` or, under
    strict markers, an unknown marker name in ``-m``."""
    if keyword := config.option.keyword.strip():
        _compiled("-k", keyword)
    if not (marks := config.option.markexpr.strip()):
        return
    expression = _compiled("-m", marks)
    if _strict_markers(config) and (
        complaint := unknown_markers(expression, _registered(config), subsystems)
    ):
        raise pytest.UsageError(complaint)
