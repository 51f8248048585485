"""IPython's magics that run Python: where on a magic's line the statement it runs starts.

IPython's own magics that execute a Python statement given on their line, in the user's namespace
(names it binds are the notebook's, except under `%timeit`, whose statement runs inside a function
IPython builds around it):

  %time [--no-raise-error] STATEMENT        runs it once and prints its wall-clock time
  %timeit [-n N -r R -t -c -q -p P -o -v V] STATEMENT
                                            repeats it: `-n` loops per run (by default as many as
                                            take 0.2 s), best of `-r` runs (7)
  %prun [-D F -l L -r -s KEY -T F -q] STATEMENT   runs it under cProfile
  %debug [--breakpoint FILE:LINE] STATEMENT runs it under the debugger

`%run` runs a file, `%macro`, `%xdel` and the rest take names or words, not statements; other
extensions' magics (`%memit`, `%lprun`) are not read. Options are read as IPython reads them: getopt
letters for `%timeit` and `%prun` (an option's value in the same word or the next, options end at
the first word that is not one), argparse's long options (and their unambiguous prefixes) for
`%time` and `%debug`. An option IPython refuses makes the magic fail before anything runs.

`%timeit`'s figure is the best of its runs divided by the loops per run. Measured with JAX 0.10 on
the CPU backend (a jitted 1000×1000 `tanh(a @ a)`, about 10–25 ms a call; `docs/rules/JAX504`): a
call that nobody waits for returns in a fraction of a millisecond, but about 32 calls can be in
flight, and the next dispatch waits for room. With the loop count IPython chooses (100 there, from
runs of at least 0.2 s) the statement without `block_until_ready()` measured 20.9 ms a loop against
20.7 ms with it: the queue fills and every later run pays for the work. With `-n 1` or `-n 10` the
best run is one whose calls all fit in the queue: 0.005 ms against 10 ms. So `%timeit` reports the
dispatch only when it is told a loop count that fits in the queue (`FEW_LOOPS` or fewer).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..syntax.magics import FEW_LOOPS

#: getopt's option letters: those that take a value, and flags.
_GETOPT = {"timeit": ("nrpv", "tcqo"), "prun": ("DlsT", "rq")}
#: argparse's long options, each with whether it takes a value, and its short forms.
_ARGPARSE = {"time": ({"--no-raise-error": False}, {}), "debug": ({"--breakpoint": True}, {"-b": "--breakpoint"})}
#: Cell magics whose body is Python: only the `%%` line itself is masked.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit"})
_WORD = re.compile(r"\S+")
_MAGIC = re.compile(r"%([A-Za-z_]\w*)")


@dataclass(frozen=True)
class MagicLine:
    """A line magic that runs Python, and where its statement starts on the line."""

    #: `time`, `timeit`, `prun`, `debug`
    name: str
    #: the column (from 0) of the statement; the line's length when the magic is given none
    start: int
    #: the magic prints the wall-clock time of one run (or of a few) of its statement
    timed: bool


def line_magic(line: str) -> MagicLine | None:
    """The magic `line` calls when it runs a statement given on it (its indentation before `%`), or
    None: another magic, an option IPython refuses, or not a magic."""
    stripped = line.lstrip(" \t")
    match = _MAGIC.match(stripped)
    if match is None or match.group(1) not in _GETOPT and match.group(1) not in _ARGPARSE:
        return None
    name = match.group(1)
    after = len(line) - len(stripped) + match.end()
    if after < len(line) and not line[after].isspace():
        return None  # `%timeitx`: another magic
    options = _options(line, after, name)
    if options is None:
        return None
    start, values = options
    loops = values.get("n")
    timed = name == "time" or name == "timeit" and loops is not None and loops.isdigit() and int(loops) <= FEW_LOOPS
    return MagicLine(name, start, timed)


def cell_magic_timed(line: str) -> bool:
    """Whether a `%%` line (stripped) times its cell's body once or in a few loops: `%%time`, or
    `%%timeit -n N` with few loops (its setup statement, after the options, is not read)."""
    words = line[2:].split()
    if not words:
        return False
    if words[0] == "time":
        return True
    if words[0] != "timeit":
        return False
    options = _options(line, 2 + line[2:].index("timeit") + len("timeit"), "timeit")
    loops = options[1].get("n") if options is not None else None
    return loops is not None and loops.isdigit() and int(loops) <= FEW_LOOPS


def _options(line: str, position: int, name: str) -> tuple[int, dict[str, str]] | None:
    """(column where the statement starts, option -> value), or None for an option IPython refuses."""
    values: dict[str, str] = {}
    words = list(_WORD.finditer(line, position))
    index = 0
    while index < len(words):
        word = words[index].group()
        if not word.startswith("-") or word == "-":
            return words[index].start(), values
        index += 1
        if name in _GETOPT:
            if word == "--":
                return None  # IPython keeps the `--` in the statement, which then does not parse
            taking, flags = _GETOPT[name]
            letters = word[1:]
            while letters:
                letter, letters = letters[0], letters[1:]
                if letter in taking:
                    if not letters:
                        if index >= len(words):
                            return None
                        letters, index = words[index].group(), index + 1
                    values[letter] = letters
                    letters = ""
                elif letter not in flags:
                    return None
        else:
            longs, shorts = _ARGPARSE[name]
            option, _, value = word.partition("=")
            option = shorts.get(option, option)
            chosen = [long for long in longs if long.startswith(option) and len(option) > 2]
            if option.startswith("--") and len(chosen) == 1:
                option = chosen[0]
            elif option not in longs:
                return words[index - 1].start(), values  # not an option of this magic: the statement
            if longs[option] and not value:
                if index >= len(words):
                    return None
                value, index = words[index].group(), index + 1
            values[option] = value
    return len(line), values
