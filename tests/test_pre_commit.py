"""The pre-commit hooks, run by real pre-commit against this repository on a throwaway git repo."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytest.importorskip("pre_commit")


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"})


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A committed snapshot of this repository: pre-commit try-repo installs from a git repo."""
    snapshot = tmp_path_factory.mktemp("hooks") / "jaxlint"
    shutil.copytree(ROOT, snapshot, ignore=shutil.ignore_patterns(
        ".git", ".venv", "*.egg-info", "__pycache__", ".jaxlint_cache", ".pytest_cache", "build", "dist",
        ".corpus", "scratch"))
    git("init", "-q", cwd=snapshot)
    git("add", "-A", cwd=snapshot)
    git("commit", "-qm", "snapshot", cwd=snapshot)
    return snapshot


def try_repo(hook_repo, project, hook):
    env = {**os.environ, "PRE_COMMIT_HOME": str(hook_repo.parent / "cache")}
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--all-files"],
                          cwd=project, capture_output=True, text=True, env=env, timeout=600)


def make_project(tmp_path, source):
    project = tmp_path / "project"
    project.mkdir(parents=True)
    git("init", "-q", cwd=project)
    (project / "model.py").write_text(source)
    git("add", "-A", cwd=project)
    return project


def test_hook_fails_on_a_bad_file_and_passes_on_a_clean_one(hook_repo, tmp_path):
    bad = make_project(tmp_path / "bad", "import jax.numpy as np\nx = np.ones(3)\n")
    result = try_repo(hook_repo, bad, "jaxlint")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "JAX601" in result.stdout
    clean = make_project(tmp_path / "clean", "import jax.numpy as jnp\nx = jnp.ones(3)\n")
    result = try_repo(hook_repo, clean, "jaxlint")
    assert result.returncode == 0, result.stdout + result.stderr


def test_fix_hook_rewrites_the_file(hook_repo, tmp_path):
    project = make_project(tmp_path, "import jax.numpy as np\nx = np.ones(3)\n")
    result = try_repo(hook_repo, project, "jaxlint-fix")
    assert result.returncode == 1  # pre-commit fails a hook that changed files
    assert (project / "model.py").read_text() == "import jax.numpy as jnp\nx = jnp.ones(3)\n"
