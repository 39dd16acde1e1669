# SPDX-License-Identifier: GPL-2.0-only
"""Malformed scripts on purpose: mutants of real scripts for the parser's robustness checks.

Bad input must end as a ``file:line: message``, never a traceback (an "internal engine
error"). Random text rarely gets past the first token, so the mutants start from real
scripts and break them the ways people and tools do: stray or lost bytes, swapped or
repeated tokens, cut-off files, pasted lines, absurd nesting and numbers no integer type
holds. The unit test drives :func:`mutate` with hypothesis; ``scripts/bench-packetdrill-fuzz``
(this module's ``main``) runs many more cases and reports their rate.
"""

import argparse
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from netregress.errors import NetregressError, run_cli

from .errors import ConfigError, ScriptError
from .loader import load_script

# Fragments of the language, spliced in where a token was: each is valid somewhere.
PIECES = [
    "0",
    "+0",
    "+.1",
    "*",
    "...",
    "~",
    "<",
    ">",
    "S",
    "S.",
    "P.",
    ".",
    "F.",
    "1:1(0)",
    "1:1001(1000)",
    "ack",
    "win",
    "257",
    "<mss 1460,nop,wscale 7>",
    "<...>",
    "udp",
    "icmp",
    "(10)",
    "[ect0]",
    "socket(..., SOCK_STREAM, IPPROTO_TCP)",
    "= 3",
    "= -1",
    "EAGAIN",
    "(Resource temporarily unavailable)",
    "read(3, ..., 10)",
    "`true`",
    "%{ x=1 }%",
    "--tolerance_usecs=",
    "--ip_version=ipv6",
    "//c\n",
    "/* c */",
    "\n",
    " ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "|",
    "=",
    '"s"',
    "0x10",
    "-1",
    "1e5",
    "ipv4 1.2.3.4 > 5.6.7.8:",
    "gre:",
    "mpls (label 1, tc 0, [S], ttl 1):",
    "TS val 1 ecr 0",
    "sack 1:2",
    "FO",
    'inet6_addr("::1")',
    "unreachable",
    "frag_needed",
    "mtu",
    "id",
    "(tos 0x10)",
    "(ttl 1)",
    "[raw (36)]",
    "{ee_errno=0}",
    "msg_flags=0",
    "cmsg_data=1",
    "htons(1)",
]
_TOKEN = re.compile(r"\S+")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?|0x[0-9a-fA-F]+")
_MAX_DEPTH = 2000
Mutator = Callable[[str, random.Random, list[str]], str]


def _span(text: str, rng: random.Random) -> tuple[int, int]:
    start = rng.randrange(len(text) + 1)
    return start, min(len(text), start + rng.randrange(1, 16))


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN.finditer(text))


def byte_edit(text: str, rng: random.Random, _: list[str]) -> str:
    """Replace, insert or drop a few bytes (any of the 256 values)."""
    start, end = _span(text, rng)
    noise = "".join(chr(rng.randrange(256)) for _ in range(rng.randrange(4)))
    return text[:start] + noise + text[end:]


def token_edit(text: str, rng: random.Random, _: list[str]) -> str:
    """Replace a token with a language fragment or another of the script's tokens, drop it,
    or repeat it."""
    tokens = _tokens(text)
    if not tokens:
        return rng.choice(PIECES)
    token = rng.choice(tokens)
    choice = rng.randrange(4)
    if choice == 0:
        new = rng.choice(PIECES)
    elif choice == 1:
        new = rng.choice(tokens).group()
    elif choice == 2:
        new = ""
    else:
        new = " ".join([token.group()] * rng.randrange(2, 6))
    return text[: token.start()] + new + text[token.end() :]


def truncate(text: str, rng: random.Random, _: list[str]) -> str:
    """The file ends early (an editor crash, a partial copy)."""
    return text[: rng.randrange(len(text) + 1)]


def duplicate_lines(text: str, rng: random.Random, _: list[str]) -> str:
    """A run of lines pasted again, up to 20 times."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    start = rng.randrange(len(lines))
    block = lines[start : start + rng.randrange(1, 8)]
    return "".join(lines[:start] + block * rng.randrange(2, 21) + lines[start:])


def splice_line(text: str, rng: random.Random, corpus: list[str]) -> str:
    """A line of another script pasted at a random line."""
    donor = rng.choice(corpus).splitlines(keepends=True) or ["\n"]
    lines = text.splitlines(keepends=True)
    at = rng.randrange(len(lines) + 1)
    return "".join(lines[:at] + [rng.choice(donor)] + lines[at:])


def deep_nesting(text: str, rng: random.Random, _: list[str]) -> str:
    """Up to 2000 openers (closed or not) where a token starts."""
    tokens = _tokens(text)
    at = rng.choice(tokens).start() if tokens else 0
    opener, closer = rng.choice([("{", "}"), ("[", "]"), ("(", ")"), ("<", ">")])
    depth = rng.choice([rng.randrange(1, 120), rng.randrange(1, _MAX_DEPTH + 1)])
    inner = rng.choice(["", "1", "...", "a=1", "1|2"])
    closing = closer * depth if rng.randrange(2) else ""
    return text[:at] + opener * depth + inner + closing + text[at:]


def huge_number(text: str, rng: random.Random, _: list[str]) -> str:
    """A number replaced by one no integer type holds (or a float that overflows)."""
    numbers = list(_NUMBER.finditer(text))
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(15, 400)))
    new = rng.choice(
        [
            f"9{digits}",
            f"-9{digits}",
            f"0x{digits}",
            f"9{digits}.5",
            f".{digits}",
            "4294967296",
            "-2147483649",
            "18446744073709551616",
        ]
    )
    if not numbers:
        return new + text
    number = rng.choice(numbers)
    return text[: number.start()] + new + text[number.end() :]


MUTATORS: list[Mutator] = [
    byte_edit,
    token_edit,
    truncate,
    duplicate_lines,
    splice_line,
    deep_nesting,
    huge_number,
]


def mutate(text: str, rng: random.Random, corpus: list[str]) -> str:
    """One to three mutations of ``text``, each drawn from :data:`MUTATORS`."""
    for _ in range(rng.randrange(1, 4)):
        text = rng.choice(MUTATORS)(text, rng, corpus)
    return text


_LOCATED = re.compile(r"^t\.pkt(:\d+)?: \S")


def check(text: str, options: list[tuple[str, str | None]]) -> None:
    """Parse ``text`` as ``t.pkt``: it may be rejected, but only by a located diagnostic (or
    an option error naming its source). Any other exception escapes to the caller."""
    try:
        load_script("t.pkt", options, text)
    except (ScriptError, ConfigError) as err:
        message = str(err)
        if not (_LOCATED.match(message) or message.startswith(("bad IPv", "bad definition"))):
            raise AssertionError(f"unlocated diagnostic: {message!r}") from None


def corpus_scripts(root: Path) -> list[Path]:
    """Every script of the tree, the negative ones included."""
    return sorted(root.rglob("*.pkt"))


def main(argv: list[str] | None = None) -> int:
    """``scripts/bench-packetdrill-fuzz``: many mutants, their rate, and any crash found."""
    parser = argparse.ArgumentParser(
        prog="scripts/bench-packetdrill-fuzz",
        description="Fuzz the packetdrill parser with mutants of real scripts: cases per "
        "second, the slowest case, and every crash (with its seed and text).",
    )
    parser.add_argument(
        "--cases", type=int, default=20000, metavar="N", help="mutants to try (default 20000)"
    )
    parser.add_argument(
        "--seed", type=int, default=None, metavar="S", help="repeat a run (default: random)"
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=Path(__file__).parents[1] / "tests",
        metavar="DIR",
        help="the *.pkt scripts to mutate (default: the checkout's tests/)",
    )
    args = parser.parse_args(argv)
    return run_cli("bench-packetdrill-fuzz", lambda: fuzz(args.cases, args.seed, args.corpus))


def fuzz(cases: int, seed: int | None, corpus: Path) -> int:
    """Run `cases` mutants of the scripts under `corpus`; 1 if any crashed the parser."""
    if cases < 1:
        raise NetregressError("--cases must be at least 1")
    seed = seed if seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    paths = corpus_scripts(corpus)
    if not paths:
        raise NetregressError(f"no *.pkt under {corpus}")
    texts = [p.read_text(encoding="latin-1") for p in paths]
    from .conventions import VARIANTS, variant_options

    variants = [variant_options(v) for v in VARIANTS] + [[]]
    crashes = 0
    slowest = 0.0
    started = time.monotonic()
    for case in range(cases):
        text = mutate(rng.choice(texts), rng, texts)
        one = time.monotonic()
        try:
            check(text, rng.choice(variants))
        except Exception as err:  # every crash is the finding we report
            crashes += 1
            print(
                f"case {case} (seed {seed}): {type(err).__name__}: {err}\n{text!r}\n",
                file=sys.stderr,
            )
        slowest = max(slowest, time.monotonic() - one)
    wall = time.monotonic() - started
    print(
        f"{cases} mutants of {len(paths)} scripts (seed {seed}): {crashes} crashes, "
        f"{wall:.1f} s, {cases / wall:.0f} cases/s, slowest {slowest * 1e3:.1f} ms"
    )
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
