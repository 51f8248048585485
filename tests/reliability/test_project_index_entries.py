"""The project index is a cache like the results: whatever happens to it (a field of the wrong type,
a changed value, a missing key, a file that is not one), a run gives the findings and the exit
status of a run without it, and rewrites what it could not use.

The results of the files checked are removed before each run, so that the run has to ask the index
(the modules the checked files import, and their importers' seeds) rather than find the results.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cache import CACHE_DIR_NAME
from jaxlint.frontends.cli import main
from jaxlint.project.stored import seal
from jaxlint_process import needs_proc, run

pytestmark = pytest.mark.system

PROJECTS = Path(__file__).parents[1] / "projects"
#: what each run checks: a module whose imports answer its questions from the index, and a module
#: that receives the seeds its importer (train.py) recorded there
CHECKS = (["src/shapes/train.py"], ["src/shapes/losses.py", "src/shapes/model.py"])


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copytree(PROJECTS / "src_layout", tmp_path / "src_layout")
    monkeypatch.chdir(tmp_path / "src_layout")
    return tmp_path / "src_layout"


def check(*args: str):
    return CliRunner().invoke(main, ["check", "--output-format", "json", *args])


def outcome(result) -> tuple[int, list]:
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else result.output


def index_file(project: Path) -> Path:
    (found,) = [p for p in (project / CACHE_DIR_NAME).rglob("projects/*.json") if not p.name.endswith(".state.json")]
    return found


def forget_results(project: Path) -> None:
    """Everything in the cache but the index: the run must consult it."""
    for path in (project / CACHE_DIR_NAME).rglob("*.json"):
        if "projects" not in path.parts or path.name.endswith(".state.json"):
            path.unlink()


def clean_outcomes(project: Path) -> list[tuple[int, list]]:
    expected = [outcome(check("--no-cache", *paths)) for paths in CHECKS]
    assert all(status == 1 and findings for status, findings in expected)
    assert outcome(check("."))[0] == 1  # writes the index
    return expected


def runs_match(project: Path, stored: str, expected: list[tuple[int, list]]) -> None:
    """Each check, from this index text, gives the findings and status of a run without the cache."""
    for paths, wanted in zip(CHECKS, expected):
        index_file(project).write_text(stored, encoding="utf-8")
        forget_results(project)
        got = check(*paths)
        assert outcome(got) == wanted, (paths, got.output[-3000:])


def leaf_paths(value, prefix=()):
    """Every place in an entry's JSON: (keys...) from the top."""
    yield prefix
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from leaf_paths(child, (*prefix, key))


def other_type(value):
    """A value of another JSON type than `value`."""
    for candidate in ({"x": 1}, [], "x", 7, None, True):
        if type(candidate) is not type(value):
            return candidate


def changed_value(value):
    """A value of the same type, different."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value[:-1] + ("x" if not value.endswith("x") else "y")
    if isinstance(value, list):
        return value[1:] if value else [0]
    if isinstance(value, dict):
        return dict(list(value.items())[1:]) if value else {"x": 1}
    return "x"


def mutated(entry, place, how):
    entry = json.loads(json.dumps(entry))
    if not place:
        return other_type(entry) if how == "type" else None
    parent = entry
    for key in place[:-1]:
        parent = parent[key]
    if how == "delete" and isinstance(parent, dict):
        del parent[place[-1]]
    elif how == "type":
        parent[place[-1]] = other_type(parent[place[-1]])
    else:
        parent[place[-1]] = changed_value(parent[place[-1]])
    return entry


def the_index(project: Path) -> dict:
    return json.loads(index_file(project).read_text(encoding="utf-8"))


def mutation_rounds(index: dict, rounds: int, hows: tuple[str, ...], where=lambda place: True):
    """Index texts, each with every module's entry changed at one place (places taken in turn,
    spread over the whole entry, `how` changing from round to round)."""
    entries = {path: json.loads(text) for path, (_, text) in index["modules"].items()}
    places = {path: [p for p in leaf_paths(entry) if where(p)] for path, entry in entries.items()}
    for number in range(rounds):
        how = hows[number % len(hows)]
        modules = {}
        for path, entry in entries.items():
            candidates = places[path]
            place = candidates[(number * 7) % len(candidates)] if candidates else ()
            modules[path] = mutated(entry, place, how)
        yield number, how, modules


def test_every_field_changed_gives_the_findings_of_a_clean_run(project):
    """Damage as it comes (a flipped value, a field lost, a value of another type): the entry no
    longer matches its seal, and is no entry."""
    expected = clean_outcomes(project)
    index = the_index(project)
    for number, how, modules in mutation_rounds(index, 12, ("change", "type", "delete")):
        stored = {path: [index["modules"][path][0], json.dumps(entry, separators=(",", ":"))]
                  for path, entry in modules.items()}
        runs_match(project, json.dumps({**index, "modules": stored}), expected)
    # the run rewrote the entries it could not use: the next one reads them as sound again
    assert all(isinstance(v, list) and len(v) == 2 for v in the_index(project)["modules"].values())


def structural(place) -> bool:
    """Places whose shape the index itself checks: not inside an answer (`answers.Q.a`) or the
    answer a record depends on (`...deps.N.2`), whose values are the analysis's."""
    if len(place) >= 3 and place[0] == "answers" and place[2] == "a":
        return False
    return not any(key == "deps" and len(place) > at + 2 and place[at + 2] == 2 for at, key in enumerate(place))


def test_an_entry_of_the_wrong_shape_with_a_matching_seal_is_no_entry(project):
    """Behind the seal every field is checked: an entry sealed as jaxlint seals but of another shape
    (an older jaxlint's bug, a hand-made entry) is no entry either, never an internal error."""
    expected = clean_outcomes(project)
    index = the_index(project)
    for number, how, modules in mutation_rounds(index, 10, ("type", "delete"), structural):
        stored = {}
        for path, entry in modules.items():
            text = json.dumps(entry, separators=(",", ":"))
            stored[path] = [seal(index["salt"], path, text), text]
        runs_match(project, json.dumps({**index, "modules": stored}), expected)


WHOLE_FILE_DAMAGE = {
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "not-json": lambda text: "{modules",
    "modules-a-list": lambda text: json.dumps({**json.loads(text), "modules": []}),
    "entry-not-a-pair": lambda text: json.dumps({**json.loads(text), "modules": {
        path: {"hash": "x"} for path in json.loads(text)["modules"]}}),
    "entry-text-not-json": lambda text: json.dumps({**json.loads(text), "modules": {
        path: [sealed, body[:-3]] for path, (sealed, body) in json.loads(text)["modules"].items()}}),
    "entries-swapped": lambda text: json.dumps({**json.loads(text), "modules": dict(zip(
        json.loads(text)["modules"], reversed(list(json.loads(text)["modules"].values()))))}),
    "deeply-nested": lambda text: "[" * 100000 + "]" * 100000,
}


@pytest.mark.parametrize("damage", sorted(WHOLE_FILE_DAMAGE))
def test_a_damaged_index_file_gives_the_findings_of_a_clean_run(project, damage):
    expected = clean_outcomes(project)
    runs_match(project, WHOLE_FILE_DAMAGE[damage](index_file(project).read_text(encoding="utf-8")), expected)


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not needs_proc, reason="needs FIFOs and /proc")
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_an_index_that_is_a_fifo_or_a_device_does_not_block(project, kind):
    expected = clean_outcomes(project)
    index = index_file(project)
    forget_results(project)
    index.unlink()
    if kind == "fifo":
        os.mkfifo(index)
    else:
        index.symlink_to("/dev/zero")
    result = run(["check", "--output-format", "json", *CHECKS[0]], project, timeout=60)
    assert (result.returncode, json.loads(result.stdout)) == expected[0]
    assert result.left_running == []


def test_a_same_size_edit_with_its_modification_time_put_back_is_seen(project):
    """`cp -p`, `rsync -t`, `touch -r`: the modification time and the size are the old ones, the
    text is not; the change time (and for a copy, the inode) says the file changed."""
    expected = clean_outcomes(project)
    buffers = project / "src/shapes/buffers.py"
    before = os.stat(buffers)
    text = buffers.read_text(encoding="utf-8")
    edited = text.replace("jax.random.normal(key, x.shape)", "jnp.zeros_like(x)")
    edited += "#" * (len(text.encode()) - len(edited.encode()))  # no longer consumes the key
    assert len(edited.encode()) == len(text.encode()) and edited != text
    buffers.write_text(edited, encoding="utf-8")
    os.utime(buffers, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(buffers).st_mtime_ns == before.st_mtime_ns and os.stat(buffers).st_size == before.st_size
    forget_results(project)
    after = outcome(check(*CHECKS[0]))
    assert after == outcome(check("--no-cache", *CHECKS[0]))
    assert len(after[1]) == len(expected[0][1]) - 1  # the reuse of the key given to `noisy` is gone
