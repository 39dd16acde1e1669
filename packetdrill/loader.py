# SPDX-License-Identifier: GPL-2.0-only
"""Load one script: read it, apply its option lines and the command line, then parse it.

The order matters and is upstream's (docs/packetdrill-language.md §3): script options first, the
command line re-applied on top, addresses finalized, and only then the events parsed (ICMP names
depend on the IP version).
"""

import os

from .config import Config, apply_option, finalize
from .errors import ScriptError
from .lexer import tokenize
from .model import Script
from .parser import Parser

CliOptions = list[tuple[str, str | None]]


def read_script(path: str) -> str:
    """The script text; unreadable files give upstream's ``stat()`` message."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise ScriptError(
            f"parse error: stat() of script file '{path}': {os.strerror(err.errno or 0)}"
        ) from None
    return data.decode("latin-1")


def load_config(path: str, cli_options: CliOptions, text: str | None = None) -> Config:
    """The run's config alone: the script's option lines and the command line, with the
    events left unparsed (what a runner needs to know about a run it hands to a binary)."""
    return _configure(path, cli_options, text)[1]


def load_script(
    path: str, cli_options: CliOptions, text: str | None = None
) -> tuple[Script, Config]:
    """Parse ``path`` (or ``text``, attributed to ``path``) into a script and its config."""
    parser, cfg = _configure(path, cli_options, text)
    init, events, cleanup = parser.parse_body()
    return Script(path, events, init, cleanup), cfg


def _configure(path: str, cli_options: CliOptions, text: str | None) -> tuple[Parser, Config]:
    """The config, and a parser positioned after the option lines."""
    if text is None:
        text = read_script(path)
    cfg = Config()
    for name, value in cli_options:
        if name == "define":
            apply_option(cfg, name, value, "Command Line")
    cli_defines = dict(cfg.defines)
    parser = Parser(path, tokenize(text, cli_defines), cfg)
    for name, value in parser.parse_options():
        apply_option(cfg, name, value, path)
    for name, value in cli_options:
        apply_option(cfg, name, value, "Command Line")
    finalize(cfg)
    if cfg.defines != cli_defines:
        # In-script --define lines change how later words lex: tokenize again and skip the
        # option lines, which defines never touch.
        parser = Parser(path, tokenize(text, cfg.defines), cfg)
        parser.parse_options()
    return parser, cfg
