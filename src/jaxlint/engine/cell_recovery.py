"""What can be kept of a notebook cell that does not parse, so that the cells after it are checked
with the names it binds.

Exercise notebooks are full of cells such as `squared_error = # your code here`: the cell is a
parse error (JAX000), but the notebook's later cells use `squared_error` as if it were filled in.
The cell is recovered statement by statement, line for line (every line keeps its number):

* its statements are found from their indentation, and each run of lines that parses is kept as it
  is (a statement written over several lines, or a decorator and its function, parses together);
* a compound statement that does not parse (`def loss(...):` whose body holds the placeholder) keeps
  its header and is recovered in its body, the same way, one level down;
* a statement that cannot be kept binds what its first line assigns (`squared_error = ...`, a
  `def` or `class` name) to a value jaxlint knows nothing of (`UNKNOWN`), and its other lines
  become `pass`: the name exists in later cells, and nothing is guessed about what it holds.
"""
from __future__ import annotations

import ast
import re
import warnings

#: A call of a name bound nowhere: its value is unknown to every rule, which then reports nothing
#: about it (what a filled-in placeholder holds is not guessed).
UNKNOWN = "__jaxlint_unparsed__()"
#: How many statements after one that does not parse alone are tried with it (a statement split
#: over lines that start at its indentation: a closing bracket, a decorator, an `else:`).
MAX_JOINED = 24
_INDENT = re.compile(r"^[ \t]*")
_CLAUSE = re.compile(r"^(?:else|elif|except|finally)\b")
_NAMED = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)")
_ASSIGNED = re.compile(r"^([^=#\n]+?)[ \t]*(?::[^=#\n]*)?=(?!=)")


def recovered(source: str) -> str:
    """`source` with every statement that does not parse replaced, line for line, by a binding of
    what it assigns to an unknown value (or by `pass`); the statements that parse are kept."""
    lines = source.split("\n")
    return "\n".join(_region(lines, 0, len(lines), ""))


def parses(text: str, indent: str = "") -> bool:
    """Whether CPython parses `text`, whose statements start at `indent` (a body, put under an `if`)."""
    if indent:
        text = "if 1:\n" + text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape is still Python
            compile(text, "<cell>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _indent(line: str) -> str:
    return _INDENT.match(line).group()


def _region(lines: list[str], start: int, end: int, indent: str) -> list[str]:
    """Lines `start` to `end` (statements at `indent`), recovered."""
    starts = []
    for number in range(start, end):
        line = lines[number]
        if not _is_code(line) or _indent(line) != indent or _CLAUSE.match(line.strip()) or line.strip()[0] in ")]}":
            continue
        if not starts or not lines[starts[-1]].strip().startswith("@"):
            starts.append(number)  # a decorator and what it decorates are one statement
    if not starts or starts[0] != start:
        starts.insert(0, start)
    bounds = [*starts, end]
    out: list[str] = []
    block = 0
    while block < len(starts):
        for last in range(block + 1, min(len(starts), block + MAX_JOINED) + 1):
            if parses("\n".join(lines[bounds[block]:bounds[last]]), indent):
                out += lines[bounds[block]:bounds[last]]
                block = last
                break
        else:
            out += _broken(lines, bounds[block], bounds[block + 1], indent)
            block += 1
    return out


def _broken(lines: list[str], start: int, end: int, indent: str) -> list[str]:
    """A statement that does not parse: recovered in its body if it is a compound statement whose
    header parses, else replaced by the binding its first line makes."""
    compound = _compound(lines, start, end, indent)
    if compound is not None:
        return compound
    out = [indent + "pass" if _is_code(line) else line for line in lines[start:end]]
    first = next((n for n in range(start, end) if _is_code(lines[n])), None)
    if first is not None:
        out[first - start] = _binding(lines[first].strip(), indent)
    return out


def _binding(statement: str, indent: str) -> str:
    named = _NAMED.match(statement)
    if named:
        return f"{indent}{named.group(1)} = {UNKNOWN}"
    assigned = _ASSIGNED.match(statement)
    if assigned and _binds_names_only(assigned.group(1)):
        return f"{indent}{assigned.group(1)} = {UNKNOWN}"
    return indent + "pass"


def _binds_names_only(target: str) -> bool:
    """Whether `target = ...` binds names and nothing else (not an item or an attribute: an
    assignment to those is an update of another value, which is not made up)."""
    try:
        tree = ast.parse(f"{target} = 0")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    statement = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return False
    return all(isinstance(node, (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.expr_context))
               for node in ast.walk(statement.targets[0]))


def _compound(lines: list[str], start: int, end: int, indent: str) -> list[str] | None:
    """A compound statement (`def`, `for`, `if` ... `else`) with each clause's header kept and
    its body recovered; None when a header does not parse or the result does not."""
    out: list[str] = []
    clause = start
    while clause < end:
        header_end = next((n for n in range(clause, min(end, clause + MAX_JOINED))
                           if lines[n].rstrip().endswith(":")
                           # a later clause (`else:`) parses after the clauses before it
                           and parses("\n".join([*out, *lines[clause:n + 1]]) + f"\n{indent} pass", indent)), None)
        if header_end is None:
            return None
        body_end = next((n for n in range(header_end + 1, end)
                         if _is_code(lines[n]) and len(_indent(lines[n])) <= len(indent)), end)
        body = next((n for n in range(header_end + 1, body_end) if _is_code(lines[n])), None)
        if body is None or not _indent(lines[body]).startswith(indent) or _indent(lines[body]) == indent:
            return None
        out += lines[clause:header_end + 1]
        out += lines[header_end + 1:body]
        out += _region(lines, body, body_end, _indent(lines[body]))
        clause = body_end
    return out if parses("\n".join(out), indent) else None
