"""Only regular files are read: a FIFO (in the tree, through a symlink, named on the command line)
never blocks the run, a link to /dev/zero is never read, a file over the size limit is not read;
each gets one clear line, the other files are checked, nothing is written."""
from __future__ import annotations

import os

import pytest

from jaxlint.api import MAX_SOURCE_BYTES, UnreadableFile, read_bytes, read_regular
from jaxlint_process import finding_paths, needs_proc, run, snapshot

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero") or not needs_proc,
                       reason="needs FIFOs and /dev/zero"),
]

BAD = "import jax.numpy as np\n"


@pytest.fixture
def special_tree(tmp_path):
    (tmp_path / "good.py").write_text(BAD)
    os.mkfifo(tmp_path / "pipe.py")
    os.mkfifo(tmp_path / "data.fifo")
    (tmp_path / "linked_pipe.py").symlink_to("data.fifo")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    # the files jaxlint reads besides the sources must not block it either
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "pyproject.toml").symlink_to("data.fifo")
    # one byte over the limit, and a JAX finding in it that must not be reported
    (tmp_path / "huge.py").write_bytes(BAD.encode() + b"#" * (MAX_SOURCE_BYTES + 1 - len(BAD)))
    return tmp_path


def test_walked_special_and_oversized_files_are_skipped_with_a_note(special_tree):
    before = snapshot(special_tree)
    result = run(["check", "--no-cache", "--jobs", "1", "."], special_tree, timeout=30)
    assert result.returncode == 1, result.stderr  # the finding of good.py; the notes are not errors
    assert finding_paths(result.stdout) == {"good.py"}
    assert sorted(result.problem_lines) == [
        "jaxlint: huge.py: larger than the 10 MiB limit (10,485,761 bytes), skipped",
        "jaxlint: linked_pipe.py: not a regular file (a FIFO), skipped",
        "jaxlint: pipe.py: not a regular file (a FIFO), skipped",
        "jaxlint: zero.py: not a regular file (a character device), skipped",
    ]
    assert "Found 1 finding (1 warning) in 1 file" in result.stderr
    assert result.left_running == [] and snapshot(special_tree) == before


def test_named_special_and_oversized_files_are_errors(special_tree):
    before = snapshot(special_tree)
    result = run(["check", "--no-cache", "pipe.py", "linked_pipe.py", "zero.py", "huge.py", "good.py"],
                 special_tree, timeout=30)
    assert result.returncode == 2, result.stderr
    assert finding_paths(result.stdout) == {"good.py"}
    assert sorted(result.problem_lines) == [
        "jaxlint: huge.py: larger than the 10 MiB limit (10,485,761 bytes), not checked",
        "jaxlint: linked_pipe.py: not a regular file (a FIFO), not checked",
        "jaxlint: pipe.py: not a regular file (a FIFO), not checked",
        "jaxlint: zero.py: not a regular file (a character device), not checked",
    ]
    assert "All checks passed" not in result.stderr
    assert result.left_running == [] and snapshot(special_tree) == before


def test_the_reader_refuses_what_discovery_did_not_see(special_tree):
    """A path swapped for a FIFO after discovery, or a caller of the API: refused without blocking
    (a blocking open would hang this test, not fail it; the subprocess tests above bound the CLI)."""
    for name, reason in [("pipe.py", "not a regular file (a FIFO)"), ("linked_pipe.py", "not a regular file (a FIFO)"),
                         ("zero.py", "not a regular file (a character device)"),
                         ("huge.py", "larger than the 10 MiB limit (10,485,761 bytes)")]:
        with pytest.raises(UnreadableFile, match=reason.replace("(", r"\(").replace(")", r"\)")):
            read_regular(str(special_tree / name), MAX_SOURCE_BYTES)
        finding = read_bytes(str(special_tree / name))
        assert finding.code == "JAX000" and finding.message == f"cannot read: {reason}"
    assert read_regular(str(special_tree / "good.py"), MAX_SOURCE_BYTES) == BAD.encode()
