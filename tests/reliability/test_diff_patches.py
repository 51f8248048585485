"""`--diff` prints a patch that `git apply` (and GNU patch) apply to the files as they are on disk,
giving exactly the bytes `--fix` writes: any line ending, no final newline, any encoding, a BOM."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

import jaxlint
from jaxlint.frontends.cli import main

SOURCES = os.path.dirname(os.path.dirname(jaxlint.__file__))

# Each file holds a safe fix (JAX601: `import jax.numpy as np`) on the line `--fix` rewrites.
CASES = {
    "lf.py": b"import jax\nimport jax.numpy as np\n\nx = np.ones(3)\n",
    "crlf.py": b"import jax\r\nimport jax.numpy as np\r\n\r\nx = np.ones(3)\r\n",
    "cr_only.py": b"import jax\rimport jax.numpy as np\r\rx = np.ones(3)\r",
    "no_final_newline.py": b"import jax\nimport jax.numpy as np\n\nx = np.ones(3)",
    "crlf_no_final_newline.py": b"import jax\r\nimport jax.numpy as np\r\nx = np.ones(3)",
    "mixed_endings.py": b"import jax\r\nimport jax.numpy as np\n\rx = np.ones(3)\r\n",
    "latin1.py": b"# -*- coding: latin-1 -*-\nimport jax.numpy as np\nname = '\xe9t\xe9'\nx = np.ones(3)  # caf\xe9\n",
    "bom_first_line.py": b"\xef\xbb\xbfimport jax.numpy as np\nx = np.ones(3)\n",
    "cp1252_crlf.py": b"# coding: cp1252\r\nimport jax.numpy as np\r\nprice = '\x80 5'\r\nx = np.ones(3)",
    "far_apart.py": b"import jax.numpy as np\n" + b"".join(b"a%d = %d\n" % (i, i) for i in range(20))
                    + b"x = np.ones(3)\n",
    "name with space.py": b"import jax.numpy as np\n",
    'quote"and\\backslash.py': b"import jax.numpy as np\n",
}
# What `--fix` must write for some of them, spelled out so that a diff and a fix that agree on
# something wrong cannot pass.
EXPECTED_FIX = {
    "crlf.py": b"import jax\r\nimport jax.numpy as jnp\r\n\r\nx = jnp.ones(3)\r\n",
    "cr_only.py": b"import jax\rimport jax.numpy as jnp\r\rx = jnp.ones(3)\r",
    "mixed_endings.py": b"import jax\r\nimport jax.numpy as jnp\n\rx = jnp.ones(3)\r\n",
    "no_final_newline.py": b"import jax\nimport jax.numpy as jnp\n\nx = jnp.ones(3)",
    "latin1.py": b"# -*- coding: latin-1 -*-\nimport jax.numpy as jnp\nname = '\xe9t\xe9'\nx = jnp.ones(3)  # caf\xe9\n",
    "bom_first_line.py": b"\xef\xbb\xbfimport jax.numpy as jnp\nx = jnp.ones(3)\n",
    "cp1252_crlf.py": b"# coding: cp1252\r\nimport jax.numpy as jnp\r\nprice = '\x80 5'\r\nx = jnp.ones(3)",
}
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}


def notebook_bytes(source_lines):
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source_lines}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode()


def make_tree(root, files):
    root.mkdir()
    for name, data in files.items():
        (root / name).write_bytes(data)


def snapshot(root):
    return {p.name: p.read_bytes() for p in root.iterdir() if p.name != ".git"}


def jaxlint(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=GIT_ENV, timeout=60)


@pytest.fixture
def trees(tmp_path, monkeypatch):
    """A git work tree to apply the patch in, and a copy of it that `--fix` rewrites."""
    files = dict(CASES)
    files["cells.ipynb"] = notebook_bytes(["import jax.numpy as np\n", "x = np.ones(3)"])
    make_tree(tmp_path / "repo", files)
    make_tree(tmp_path / "fixed", files)
    assert git(tmp_path / "repo", "init", "-q").returncode == 0
    return tmp_path / "repo", tmp_path / "fixed", monkeypatch


def diff_of(tree, monkeypatch):
    monkeypatch.chdir(tree)
    return jaxlint("--diff", ".")


def fix_in(tree, monkeypatch):
    monkeypatch.chdir(tree)
    return jaxlint("--fix", ".")


def test_git_apply_gives_the_bytes_fix_writes(trees):
    repo, fixed, monkeypatch = trees
    before = snapshot(repo)
    shown = diff_of(repo, monkeypatch)
    assert shown.exit_code == 1
    assert snapshot(repo) == before  # --diff writes nothing
    assert fix_in(fixed, monkeypatch).exit_code == 0
    after_fix = snapshot(fixed)
    for name, data in EXPECTED_FIX.items():
        assert after_fix[name] == data, name
    assert all(after_fix[name] != before[name] for name in before)  # every file has a fix to show

    (repo / "fix.patch").write_bytes(shown.stdout_bytes)
    checked = git(repo, "apply", "--check", "fix.patch")
    assert checked.returncode == 0, checked.stderr.decode(errors="replace")
    applied = git(repo, "apply", "fix.patch")
    assert applied.returncode == 0, applied.stderr.decode(errors="replace")
    (repo / "fix.patch").unlink()
    assert snapshot(repo) == after_fix


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")
def test_gnu_patch_gives_the_bytes_fix_writes(trees):
    repo, fixed, monkeypatch = trees
    shown = diff_of(repo, monkeypatch)
    fix_in(fixed, monkeypatch)
    applied = subprocess.run(["patch", "-p1", "--no-backup-if-mismatch", "--batch"], cwd=repo,
                             input=shown.stdout_bytes, capture_output=True, timeout=60)
    assert applied.returncode == 0, applied.stdout.decode(errors="replace")
    assert snapshot(repo) == snapshot(fixed)


def _assert_latin1_patch(returncode: int, stdout: bytes, stderr, tmp_path) -> None:
    assert returncode == 1, stderr
    assert b"-name = '\xe9t\xe9'\n" not in stdout  # unchanged line: context, not removed
    assert b" name = '\xe9t\xe9'\n" in stdout
    assert b"+x = jnp.ones(3)  # caf\xe9\n" in stdout
    assert (tmp_path / "latin1.py").read_bytes() == CASES["latin1.py"]


def test_patch_of_non_utf8_file_goes_to_an_ascii_stdout_as_its_own_bytes(tmp_path, monkeypatch):
    # In process, with click's runner writing text as ASCII (the test below runs the real command):
    # stdout must carry the file's bytes, not a re-encoding.
    (tmp_path / "latin1.py").write_bytes(CASES["latin1.py"])
    monkeypatch.chdir(tmp_path)
    run = CliRunner(charset="ascii").invoke(main, ["check", "--no-cache", "--diff", "latin1.py"],
                                            env={"NO_COLOR": "1", "CI": None}, catch_exceptions=False)
    _assert_latin1_patch(run.exit_code, run.stdout_bytes, run.stderr, tmp_path)


@pytest.mark.system
def test_patch_of_non_utf8_file_goes_to_stdout_as_its_own_bytes(tmp_path):
    # The real command, not click's runner: stdout must carry the file's bytes, not a re-encoding.
    (tmp_path / "latin1.py").write_bytes(CASES["latin1.py"])
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "NO_COLOR": "1", "PYTHONPATH": SOURCES}
    env.pop("CI", None)
    run = subprocess.run([sys.executable, "-m", "jaxlint", "check", "--no-cache", "--diff", "latin1.py"],
                         cwd=tmp_path, capture_output=True, env=env, timeout=120)
    _assert_latin1_patch(run.returncode, run.stdout, run.stderr, tmp_path)


def test_diff_through_a_symlink_names_the_file_it_resolves_to(tmp_path, monkeypatch):
    # `git apply` refuses to patch through a symlink, and patching the link's own text would be
    # wrong anyway: the patch names the real file, once, however many paths lead to it.
    repo = tmp_path / "repo"
    make_tree(repo, {"real.py": CASES["lf.py"]})
    (repo / "alias.py").symlink_to("real.py")
    assert git(repo, "init", "-q").returncode == 0
    monkeypatch.chdir(repo)
    shown = jaxlint("--diff", "alias.py", "real.py")
    assert shown.exit_code == 1
    assert shown.stdout_bytes.startswith(b"--- a/real.py\n+++ b/real.py\n")
    assert shown.stdout_bytes.count(b"--- ") == 1
    assert "1 fix would be applied in 1 file(s)" in shown.stderr
    (tmp_path / "fix.patch").write_bytes(shown.stdout_bytes)
    applied = git(repo, "apply", str(tmp_path / "fix.patch"))
    assert applied.returncode == 0, applied.stderr
    assert os.readlink(repo / "alias.py") == "real.py"
    assert (repo / "real.py").read_bytes() == CASES["lf.py"].replace(b"np", b"jnp")


def test_fix_together_with_diff_writes_nothing(tmp_path, monkeypatch):
    make_tree(tmp_path / "tree", {"crlf.py": CASES["crlf.py"]})
    monkeypatch.chdir(tmp_path / "tree")
    stat_before = os.stat("crlf.py")
    shown = jaxlint("--fix", "--diff", ".")
    assert shown.exit_code == 1
    assert b"+import jax.numpy as jnp\r\n" in shown.stdout_bytes
    assert snapshot(tmp_path / "tree") == {"crlf.py": CASES["crlf.py"]}  # no stray temporary file either
    assert os.stat("crlf.py").st_mtime_ns == stat_before.st_mtime_ns
