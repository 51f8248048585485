import os

import pytest

from jaxlint.frontends import discovery
from jaxlint.frontends.discovery import DiscoveryProblem, discover


def make(base, *relpaths, text="x = 1\n"):
    for rel in relpaths:
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_extension_filtering(project):
    make(project, "a.py", "b.pyi", "c.ipynb", "d.txt", "e.pyc", "f.py.bak", "pkg/g.py", "pkg/h.md")
    files, problems = discover(["."])
    assert files == ["a.py", "b.pyi", "c.ipynb", os.path.join("pkg", "g.py")]
    assert problems == []


def test_default_excluded_dirs(project):
    names = [".git", ".venv", "venv", "__pycache__", "node_modules", "build", "dist",
             ".tox", ".mypy_cache", "site-packages", "foo.egg-info", ".jaxlint_cache", "nb/.ipynb_checkpoints"]
    make(project, "keep.py", *[f"{name}/x.py" for name in names], "src/build/y.py")
    make(project, ".hidden/z.py")
    files, _ = discover(["."])
    assert files == [os.path.join(".hidden", "z.py"), "keep.py"]


def test_explicit_default_excluded_dir_is_walked(project):
    make(project, "build/x.py")
    assert discover(["build"])[0] == [os.path.join("build", "x.py")]


def test_exclude_patterns(project):
    make(
        project,
        "tests/fixtures/a.py",
        "tests/test_a.py",
        "src/msg_pb2.py",
        "src/msg.py",
        "legacy/old.py",
        "src/legacy/new.py",
        "gen.py",
        "src/gen.py",
    )
    files, _ = discover(["."], exclude=["tests/fixtures/", "*_pb2.py", "/legacy/**", "/gen.py"])
    assert files == [
        os.path.join("src", "gen.py"),
        os.path.join("src", "legacy", "new.py"),
        os.path.join("src", "msg.py"),
        os.path.join("tests", "test_a.py"),
    ]


def test_exclude_is_relative_to_root(project):
    make(project, "sub/gen/a.py", "sub/other/gen/b.py")
    files, _ = discover(["sub"], exclude=["/gen/"], root="sub")
    assert files == [os.path.join("sub", "other", "gen", "b.py")]
    # relative to the current directory "/gen/" names nothing
    assert len(discover(["sub"], exclude=["/gen/"])[0]) == 2


def test_exclude_negation_inside_directory(project):
    make(project, "legacy/old.py", "legacy/keep.py")
    files, _ = discover(["."], exclude=["legacy/**", "!legacy/keep.py"])
    assert files == [os.path.join("legacy", "keep.py")]


def test_nested_gitignore_anchoring_and_negation(project):
    (project / ".git").mkdir()
    write(project / ".gitignore", "*_gen.py\n/top_only.py\n")
    write(project / "pkg" / ".gitignore", "/local.py\n!keep_gen.py\ndata/\n")
    make(
        project,
        "a_gen.py",
        "top_only.py",
        "local.py",
        "pkg/top_only.py",
        "pkg/local.py",
        "pkg/sub/local.py",
        "pkg/b_gen.py",
        "pkg/keep_gen.py",
        "pkg/data/d.py",
        "data/d.py",
    )
    files, _ = discover(["."])
    assert files == [
        os.path.join("data", "d.py"),
        "local.py",
        os.path.join("pkg", "keep_gen.py"),
        os.path.join("pkg", "sub", "local.py"),
        os.path.join("pkg", "top_only.py"),
    ]
    assert len(discover(["."], respect_gitignore=False)[0]) == 10


def test_gitignore_dir_contents_pattern_allows_negation(project):
    (project / ".git").mkdir()
    write(project / ".gitignore", "gen/**\n!gen/keep.py\n")
    make(project, "gen/a.py", "gen/keep.py")
    assert discover(["."])[0] == [os.path.join("gen", "keep.py")]


def test_parent_gitignore_applies_up_to_repo_root(tmp_path, monkeypatch):
    outer = tmp_path / "outer"
    repo = outer / "repo"
    (repo / ".git").mkdir(parents=True)
    write(outer / ".gitignore", "*.py\n")  # above the repository: must not apply
    write(repo / ".gitignore", "ignored_*.py\n")
    write(repo / "src" / ".gitignore", "/pkg/skip.py\n")
    make(repo, "src/pkg/ok.py", "src/pkg/ignored_x.py", "src/pkg/skip.py")
    monkeypatch.chdir(repo / "src" / "pkg")
    files, problems = discover(["."])
    assert files == ["ok.py"]
    assert problems == []


def test_git_info_exclude(project):
    (project / ".git" / "info").mkdir(parents=True)
    write(project / ".git" / "info" / "exclude", "secret.py\n")
    make(project, "secret.py", "open.py", "sub/secret.py")
    assert discover(["."])[0] == ["open.py"]
    # also when walking below the repository root, given as an absolute path
    assert discover([str(project / "sub")])[0] == []


def test_nested_repository_is_not_covered_by_outer_gitignore(project):
    (project / ".git").mkdir()
    write(project / ".gitignore", "vendored_*.py\n")
    (project / "inner" / ".git").mkdir(parents=True)
    make(project, "vendored_a.py", "inner/vendored_b.py")
    assert discover(["."])[0] == [os.path.join("inner", "vendored_b.py")]


def test_explicit_file_bypasses_gitignore_but_not_exclude(project):
    (project / ".git").mkdir()
    write(project / ".gitignore", "ignored.py\n")
    make(project, "ignored.py", "excluded.py", "notes.txt")
    assert discover(["."])[0] == ["excluded.py"]
    files, problems = discover(["ignored.py", "excluded.py", "notes.txt"], exclude=["excluded.py"])
    assert files == ["ignored.py", "notes.txt"]
    assert problems == []


def test_explicit_ignored_directory_is_walked(project):
    (project / ".git").mkdir()
    write(project / ".gitignore", "generated/\n")
    write(project / "generated" / ".gitignore", "skip.py\n")
    make(project, "generated/a.py", "generated/skip.py")
    assert discover(["."])[0] == []
    assert discover(["generated"])[0] == [os.path.join("generated", "a.py")]


def test_nonexistent_path_is_fatal_and_others_still_found(project):
    make(project, "a.py", "pkg/b.py")
    files, problems = discover(["missing.py", "pkg", "a.py"])
    assert files == ["a.py", os.path.join("pkg", "b.py")]
    assert problems == [DiscoveryProblem("missing.py", "no such file or directory", True)]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlink_loop_reported_once(project):
    make(project, "pkg/a.py", "pkg/sub/b.py")
    os.symlink(project / "pkg", project / "pkg" / "sub" / "back")
    os.symlink(".", project / "pkg" / "self")
    files, problems = discover(["."])
    assert files == [os.path.join("pkg", "a.py"), os.path.join("pkg", "sub", "b.py")]
    assert sorted(problems, key=lambda p: p.path) == [
        DiscoveryProblem(os.path.join("pkg", "self"), "symlink loop, not followed", False),
        DiscoveryProblem(os.path.join("pkg", "sub", "back"), "symlink loop, not followed", False),
    ]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinked_directory_is_followed_and_real_path_preferred(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    make(outside, "ext.py")
    project = tmp_path / "project"
    make(project, "z_real/r.py")
    os.symlink(outside, project / "linked")
    os.symlink(project / "z_real", project / "a_alias")
    monkeypatch.chdir(project)
    files, problems = discover(["."])
    assert files == [os.path.join("linked", "ext.py"), os.path.join("z_real", "r.py")]
    assert [(p.path, p.fatal) for p in problems] == [("a_alias", False)]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_broken_and_self_referencing_symlinks_are_returned_as_files(project):
    make(project, "ok.py")
    os.symlink("loop.py", project / "loop.py")
    os.symlink("nowhere.py", project / "broken.py")
    os.symlink("nowhere", project / "broken.txt")
    files, problems = discover(["."])
    assert files == ["broken.py", "loop.py", "ok.py"]
    assert problems == []
    # named explicitly they are files too, not missing paths
    files, problems = discover(["loop.py"])
    assert files == ["loop.py"] and problems == []


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinked_file_is_followed(project):
    make(project, "data/real.txt")
    os.symlink(project / "data" / "real.txt", project / "alias.py")
    assert discover(["."])[0] == ["alias.py"]


def test_unreadable_directory_is_reported_and_walk_continues(project, monkeypatch):
    make(project, "a.py", "locked/b.py", "open/c.py")
    real_scandir = os.scandir
    locked = str(project / "locked")

    def fake_scandir(path):
        if os.path.abspath(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", fake_scandir)
    files, problems = discover(["."])
    assert files == ["a.py", os.path.join("open", "c.py")]
    assert len(problems) == 1
    assert problems[0].path == "locked" and not problems[0].fatal
    assert "permission denied" in problems[0].message


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads everything")
def test_unreadable_directory_real_permissions(project):
    make(project, "a.py", "locked/b.py")
    (project / "locked").chmod(0)
    try:
        files, problems = discover(["."])
    finally:
        (project / "locked").chmod(0o755)
    assert files == ["a.py"]
    assert [(p.path, p.fatal) for p in problems] == [("locked", False)]


def test_sorted_and_deduplicated(project):
    make(project, "a/x.py", "a/y.py", "b.py")
    files, problems = discover(["b.py", "a", "a/x.py", "./a/x.py", "a"])
    assert files == [os.path.join("a", "x.py"), os.path.join("a", "y.py"), "b.py"]
    assert problems == []


def test_paths_outside_cwd_are_absolute(tmp_path, monkeypatch):
    make(tmp_path, "elsewhere/e.py", "here/h.py")
    monkeypatch.chdir(tmp_path / "here")
    files, _ = discover([str(tmp_path / "elsewhere"), "."])
    assert files == sorted([str(tmp_path / "elsewhere" / "e.py"), "h.py"])
