"""The pre-commit hooks, run by real pre-commit from a snapshot of this repository on throwaway git repos."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.system

pytest.importorskip("pre_commit")


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}).stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A committed snapshot of this repository: pre-commit installs hooks from a git repo at a revision."""
    snapshot = tmp_path_factory.mktemp("hooks") / "jaxlint"
    shutil.copytree(ROOT, snapshot, ignore=shutil.ignore_patterns(
        ".git", ".venv", "*.egg-info", "__pycache__", ".jaxlint_cache", ".pytest_cache", "build", "dist",
        ".corpus", "scratch"))
    git("init", "-q", cwd=snapshot)
    git("add", "-A", cwd=snapshot)
    git("commit", "-qm", "snapshot", cwd=snapshot)
    return snapshot


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    """One pre-commit cache for the module: the hooks' environment is built once, as on a user's machine."""
    return tmp_path_factory.mktemp("pre-commit-home")


def run_hook(project, hook, home):
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", hook, "--all-files"],
                          cwd=project, capture_output=True, text=True, env=env, timeout=600)


def make_project(tmp_path, source, hook_repo):
    """A git repository whose .pre-commit-config.yaml uses both hooks of `hook_repo` at its HEAD."""
    project = tmp_path / "project"
    project.mkdir(parents=True)
    git("init", "-q", cwd=project)
    (project / "model.py").write_text(source)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {git('rev-parse', 'HEAD', cwd=hook_repo).strip()}\n"
        "  hooks:\n  - id: jaxlint\n  - id: jaxlint-fix\n")
    git("add", "-A", cwd=project)
    return project


def test_hook_fails_on_a_bad_file_and_passes_on_a_clean_one(hook_repo, pre_commit_home, tmp_path):
    bad = make_project(tmp_path / "bad", "import jax.numpy as np\nx = np.ones(3)\n", hook_repo)
    result = run_hook(bad, "jaxlint", pre_commit_home)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "JAX601" in result.stdout
    assert (bad / "model.py").read_text() == "import jax.numpy as np\nx = np.ones(3)\n"  # only reports
    clean = make_project(tmp_path / "clean", "import jax.numpy as jnp\nx = jnp.ones(3)\n", hook_repo)
    result = run_hook(clean, "jaxlint", pre_commit_home)
    assert result.returncode == 0, result.stdout + result.stderr


def test_fix_hook_rewrites_the_file(hook_repo, pre_commit_home, tmp_path):
    project = make_project(tmp_path, "import jax.numpy as np\nx = np.ones(3)\n", hook_repo)
    result = run_hook(project, "jaxlint-fix", pre_commit_home)
    assert result.returncode == 1  # pre-commit fails a hook that changed files
    assert (project / "model.py").read_text() == "import jax.numpy as jnp\nx = jnp.ones(3)\n"


def test_the_hook_given_one_changed_module_reports_what_its_importer_causes(hook_repo, pre_commit_home, tmp_path):
    """pre-commit passes only the changed file: its findings are still those of the whole project
    (`losses.py` is traced by `train_step` in another module)."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "tests" / "projects" / "src_layout", project)
    git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {git('rev-parse', 'HEAD', cwd=hook_repo).strip()}\n"
        "  hooks:\n  - id: jaxlint\n")
    git("add", "-A", cwd=project)
    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home)}
    result = subprocess.run([sys.executable, "-m", "pre_commit", "run", "jaxlint", "--files", "src/shapes/losses.py"],
                            cwd=project, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "src/shapes/losses.py:6:8: JAX201" in result.stdout
    # the hook prints the full report: the source, and the call in another module that traces it
    assert "via src/shapes/train.py:11 (`train_step` calls it under `jax.jit`)" in result.stdout
    assert "6 |     if " in result.stdout
    assert "train.py:21" not in result.stdout  # only the file given is reported
