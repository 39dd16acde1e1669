"""Parser robustness: random and mutated scripts never crash the engine, and every rejection
is a ``file:line: message`` diagnostic (or an option error naming the file)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netns.packetdrill.errors import ConfigError, ScriptError
from netns.packetdrill.loader import load_script
from netns.packetdrill.pytest_plugin import variant_options, variants_for

CORPUS = sorted((Path(__file__).parents[1] / "packetdrill").rglob("*.pkt"))
_LOCATED = re.compile(r"^t\.pkt(:\d+)?: \S")
_PIECES = ["0", "+0", "+.1", "*", "...", "~", "<", ">", "S", "S.", "P.", ".", "F.", "1:1(0)",
           "1:1001(1000)", "ack", "win", "257", "<mss 1460,nop,wscale 7>", "<...>", "udp", "icmp",
           "(10)", "[ect0]", "socket(..., SOCK_STREAM, IPPROTO_TCP)", "= 3", "= -1", "EAGAIN",
           "(Resource temporarily unavailable)", "read(3, ..., 10)", "`true`", "%{ x=1 }%",
           "--tolerance_usecs=", "--ip_version=ipv6", "//c\n", "/* c */", "\n", " ", "{", "}",
           "[", "]", ",", "|", "=", '"s"', "0x10", "-1", "1e5", "ipv4 1.2.3.4 > 5.6.7.8:",
           "gre:", "mpls (label 1, tc 0, [S], ttl 1):", "TS val 1 ecr 0", "sack 1:2", "FO",
           "inet6_addr(\"::1\")", "unreachable", "frag_needed", "mtu", "id"]
_SETTINGS = settings(max_examples=300, deadline=None, database=None,
                     suppress_health_check=[HealthCheck.too_slow])


def check(text: str) -> None:
    try:
        load_script("t.pkt", [], text)
    except (ScriptError, ConfigError) as err:
        message = str(err)
        assert _LOCATED.match(message) or message.startswith(("bad IPv", "bad definition")), \
            message


@_SETTINGS
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=255), max_size=200))
def test_random_text_never_crashes(text: str) -> None:
    check(text)


@_SETTINGS
@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_random_token_soup_never_crashes(pieces: list[str]) -> None:
    check(" ".join(pieces))


@_SETTINGS
@given(st.sampled_from(CORPUS), st.data())
def test_mutated_corpus_scripts_never_crash(path: Path, data: st.DataObject) -> None:
    text = path.read_text()
    for _ in range(data.draw(st.integers(1, 4))):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, min(len(text), start + 12)))
        insert = data.draw(st.sampled_from(_PIECES + [""]))
        text = text[:start] + insert + text[end:]
    check(text)


def test_the_corpus_parses_in_its_variants_unless_it_expects_to_fail() -> None:
    for path in CORPUS:
        text = path.read_text()
        for variant in variants_for(path, text):
            try:
                load_script("t.pkt", variant_options(variant), text)
            except ScriptError as err:
                assert "expect-fail" in text, f"{path} [{variant}]: {err}"
