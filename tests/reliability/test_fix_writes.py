"""What `--fix` writes and where: through symlinks to the real file, keeping hard links, inodes,
mode and owner, never into read-only files; and when a write fails, the findings reported and
the exit status are those of the file as it is on disk."""
import errno
import json
import os
import stat

import pytest
from click.testing import CliRunner

from jaxlint.api import lint_file
from jaxlint.frontends.cli import main
from jaxlint.frontends.fix_writer import FixWriter, NotWritten
from jaxlint.model.settings import Settings

BAD = b"import jax\nimport jax.numpy as np\n\nx = np.ones(3)\n"
FIXED = b"import jax\nimport jax.numpy as jnp\n\nx = jnp.ones(3)\n"
# With a finding that has no fix (key reuse), so that the findings left after a fix are not none.
BAD_WITH_UNFIXABLE = BAD + b"key = jax.random.PRNGKey(0)\na = jax.random.normal(key, (2,))\nb = jax.random.normal(key, (2,))\n"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def fix(*paths, output="json"):
    return CliRunner().invoke(main, ["check", "--no-cache", "--fix", "--output-format", output, *paths],
                              catch_exceptions=False)


def codes(result):
    return sorted((d["path"], d["code"]) for d in json.loads(result.stdout))


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".jaxlint-"))


# -- symlinks -------------------------------------------------------------------------------------
def test_fix_through_a_symlink_writes_the_target_and_keeps_the_link(tree):
    (tree / "elsewhere").mkdir()
    target = tree / "elsewhere" / "real.py"
    target.write_bytes(BAD)
    (tree / "pkg").mkdir()
    (tree / "pkg" / "alias.py").symlink_to("../elsewhere/real.py")
    result = fix("pkg/alias.py")
    assert result.exit_code == 0, result.output
    assert codes(result) == []
    assert (tree / "pkg" / "alias.py").is_symlink()
    assert os.readlink(tree / "pkg" / "alias.py") == "../elsewhere/real.py"
    assert target.read_bytes() == FIXED
    again = fix("pkg/alias.py")
    assert again.exit_code == 0 and target.read_bytes() == FIXED
    assert leftovers(tree / "elsewhere") == [] and leftovers(tree / "pkg") == []


def test_a_file_reached_through_two_paths_is_fixed_once(tree):
    (tree / "real.py").write_bytes(BAD)
    (tree / "alias.py").symlink_to("real.py")
    result = fix("alias.py", "real.py", output="text")
    assert result.exit_code == 0, result.output
    assert "changed since" not in result.stderr
    assert "Fixed 1 finding." in result.stderr  # not once per path
    assert (tree / "real.py").read_bytes() == FIXED
    assert (tree / "alias.py").is_symlink()


# -- hard links -----------------------------------------------------------------------------------
def test_fix_keeps_hard_links(tree):
    (tree / "one.py").write_bytes(BAD)
    os.link(tree / "one.py", tree / "two.py")
    inode = (tree / "one.py").stat().st_ino
    result = fix("one.py")
    assert result.exit_code == 0, result.output
    for name in ("one.py", "two.py"):
        status = (tree / name).stat()
        assert (status.st_ino, status.st_nlink) == (inode, 2)
        assert (tree / name).read_bytes() == FIXED
    assert leftovers(tree) == []


def test_hard_links_named_together_are_fixed_once(tree):
    (tree / "one.py").write_bytes(BAD_WITH_UNFIXABLE)
    os.link(tree / "one.py", tree / "two.py")
    result = fix("one.py", "two.py")
    assert result.exit_code == 1, result.output
    assert "changed since" not in result.stderr
    # what is left after the fix, for both names: the key reuse, which has no fix
    assert codes(result) == [("one.py", "JAX101"), ("two.py", "JAX101")]
    assert (tree / "one.py").read_bytes() == BAD_WITH_UNFIXABLE.replace(b"np", b"jnp")
    assert (tree / "one.py").stat().st_nlink == 2


# -- mode and owner -------------------------------------------------------------------------------
def test_fix_keeps_mode(tree):
    (tree / "tool.py").write_bytes(BAD)
    os.chmod(tree / "tool.py", 0o751)
    assert fix("tool.py").exit_code == 0
    assert stat.S_IMODE((tree / "tool.py").stat().st_mode) == 0o751
    assert (tree / "tool.py").read_bytes() == FIXED


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another owner needs root")
def test_fix_by_root_keeps_the_owner(tree):
    (tree / "theirs.py").write_bytes(BAD)
    os.chown(tree / "theirs.py", 12345, 23456)
    assert fix("theirs.py").exit_code == 0
    status = (tree / "theirs.py").stat()
    assert (status.st_uid, status.st_gid) == (12345, 23456)
    assert (tree / "theirs.py").read_bytes() == FIXED


@pytest.mark.parametrize("obstacle", ["owner cannot be given", "directory not writable"])
def test_fix_rewrites_in_place_when_a_new_file_would_not_be_the_same(tree, monkeypatch, obstacle):
    # Unprivileged users cannot give a new file someone else's owner or group, and a file can be
    # writable in a directory that is not: then the file is rewritten in place (same inode).
    import tempfile

    def refused(*args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    (tree / "shared.py").write_bytes(BAD)
    if obstacle == "owner cannot be given":
        if os.geteuid() != 0:
            pytest.skip("needs root to give the file another owner")
        os.chown(tree / "shared.py", 12345, 23456)
        monkeypatch.setattr(os, "chown", refused)
    else:
        monkeypatch.setattr(tempfile, "mkstemp", refused)
    before = (tree / "shared.py").stat()
    assert fix("shared.py").exit_code == 0
    after = (tree / "shared.py").stat()
    assert (after.st_ino, after.st_uid, after.st_gid) == (before.st_ino, before.st_uid, before.st_gid)
    assert (tree / "shared.py").read_bytes() == FIXED
    assert leftovers(tree) == []


# -- read-only files ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [0o444, 0o555, 0o400])
def test_read_only_file_is_not_written_even_by_root(tree, mode):
    (tree / "frozen.py").write_bytes(BAD)
    (tree / "other.py").write_bytes(BAD)
    os.chmod(tree / "frozen.py", mode)
    result = fix("frozen.py", "other.py")
    assert "frozen.py: read-only, fixes not written" in result.stderr
    assert (tree / "frozen.py").read_bytes() == BAD
    assert stat.S_IMODE((tree / "frozen.py").stat().st_mode) == mode
    # the findings of the file as it is, and the other file fixed as usual
    assert codes(result) == [("frozen.py", "JAX601")]
    assert (tree / "other.py").read_bytes() == FIXED
    assert result.exit_code == 1


def test_read_only_target_of_a_symlink_is_not_written(tree):
    (tree / "frozen.py").write_bytes(BAD)
    os.chmod(tree / "frozen.py", 0o444)
    (tree / "alias.py").symlink_to("frozen.py")
    result = fix("alias.py")
    assert "alias.py: read-only, fixes not written" in result.stderr
    assert (tree / "frozen.py").read_bytes() == BAD
    assert (tree / "alias.py").is_symlink()
    assert result.exit_code == 1


# -- failed writes --------------------------------------------------------------------------------
def test_failed_write_reports_the_findings_on_disk_and_exits_2(tree, monkeypatch):
    (tree / "full.py").write_bytes(BAD_WITH_UNFIXABLE)

    def disk_full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    result = fix("full.py", output="text")
    assert result.exit_code == 2
    assert "full.py: fixes not written: No space left on device" in result.stderr
    assert "All checks passed" not in result.stderr and "Fixed" not in result.stderr
    # every finding of the unfixed text: the fixable import, and the key reuse
    reported = sorted(line.split(": ")[1].split()[0] for line in result.stdout.splitlines())
    assert reported == ["JAX101", "JAX601"]
    assert (tree / "full.py").read_bytes() == BAD_WITH_UNFIXABLE
    assert leftovers(tree) == []


def test_failed_in_place_write_restores_the_file(tree, monkeypatch):
    (tree / "one.py").write_bytes(BAD)
    os.link(tree / "one.py", tree / "two.py")
    real_fsync, calls = os.fsync, []

    def fsync_fails_once(fd):
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_fails_once)
    result = fix("one.py")
    assert result.exit_code == 2
    assert "one.py: fixes not written: Input/output error" in result.stderr
    assert codes(result) == [("one.py", "JAX601")]
    assert (tree / "two.py").read_bytes() == BAD
    assert (tree / "one.py").stat().st_nlink == 2


def test_file_changed_since_it_was_checked_is_not_written(tree):
    (tree / "edited.py").write_bytes(BAD)
    result = lint_file("edited.py", Settings(), fix=True)
    assert [f.code for f in result.findings] == ["JAX601"]  # of the text as read, not the fixed one
    assert result.fixed_findings == []
    edit = BAD + b"y = 1\n"
    (tree / "edited.py").write_bytes(edit)  # an editor saves while jaxlint runs
    outcome = FixWriter().write(result)
    assert isinstance(outcome, NotWritten) and outcome.error
    assert "changed since it was checked" in outcome.message
    assert (tree / "edited.py").read_bytes() == edit


# -- nothing written without --fix ----------------------------------------------------------------
@pytest.mark.parametrize("options", [[], ["--diff"], ["--statistics"], ["--output-format", "sarif"]])
def test_nothing_written_without_fix(tree, options):
    (tree / "bad.py").write_bytes(BAD)
    before = os.stat(tree / "bad.py")
    result = CliRunner().invoke(main, ["check", "--no-cache", *options, "."])
    assert result.exit_code == 1
    assert (tree / "bad.py").read_bytes() == BAD
    assert os.stat(tree / "bad.py").st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in tree.iterdir()) == ["bad.py"]
