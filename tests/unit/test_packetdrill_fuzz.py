# SPDX-License-Identifier: GPL-2.0-only
"""Parser robustness: random and mutated scripts never crash the engine, and every rejection
is a ``file:line: message`` diagnostic (or an option error naming the file).

The corpus mutants (every ``*.pkt`` under tests/, mutated by :mod:`packetdrill.fuzz`)
are the bulk: 1,000 per run here, many more in ``scripts/bench-packetdrill-fuzz``."""

import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from packetdrill.conventions import VARIANTS, variant_options, variants_for
from packetdrill.errors import ScriptError
from packetdrill.fuzz import PIECES, check, corpus_scripts, mutate
from packetdrill.loader import load_script

CORPUS = corpus_scripts(Path(__file__).parents[1])
TEXTS = [path.read_text(encoding="latin-1") for path in CORPUS]
_SETTINGS = settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@_SETTINGS
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=255), max_size=200))
def test_random_text_never_crashes(text: str) -> None:
    check(text, [])


@_SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_random_token_soup_never_crashes(pieces: list[str]) -> None:
    check(" ".join(pieces), [])


@settings(_SETTINGS, max_examples=1000)
@given(
    st.sampled_from(TEXTS), st.sampled_from([None, *VARIANTS]), st.randoms(use_true_random=False)
)
def test_corpus_mutants_never_crash(text: str, variant: str | None, rng: random.Random) -> None:
    check(mutate(text, rng, TEXTS), variant_options(variant) if variant else [])


def test_deep_nesting_and_huge_numbers_are_located_errors() -> None:
    """The two crashes this file was extended for, pinned."""
    head = "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
    for body in (
        "+0 setsockopt(3, 0, 0, " + "{" * 500 + "}" * 500 + ", 4) = 0\n",
        "+0 poll(" + "[" * 5000 + ", 1, 0) = 0\n",
        "12345678901234567890123 close(3) = 0\n",
        "1" + "0" * 400 + ".5 close(3) = 0\n",
    ):
        try:
            load_script("t.pkt", [], head + body)
        except ScriptError as err:
            assert str(err).startswith("t.pkt:2: "), err
        else:
            raise AssertionError(f"accepted: {body[:40]}")


def test_the_corpus_parses_in_its_variants_unless_it_expects_to_fail() -> None:
    for path in CORPUS:
        text = path.read_text()
        for variant in variants_for(path, text):
            try:
                load_script("t.pkt", variant_options(variant), text)
            except ScriptError as err:
                assert "expect-fail" in text, f"{path} [{variant}]: {err}"
