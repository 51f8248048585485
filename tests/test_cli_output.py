"""The command line's report formats for people: `full` on a terminal, `concise` when piped, colour
as the environment asks."""
import os
import re
import select
import subprocess
import sys
import time

import pytest

BAD = "import jax\nimport jax.numpy as np\n\n\ndef f(t):\n    return jax.tree_map(np.abs, t)\n"
CONCISE = [
    "bad.py:2:8: JAX601 `jax.numpy` imported as `np`: readers and tools take `np` for NumPy, whose arrays are "
    "mutable and eager; import it as `import jax.numpy as jnp` [*]",
    "bad.py:6:12: JAX602 `jax.tree_map` is deprecated in JAX 0.4.26 and removed in 0.6.0; use `jax.tree.map`, "
    "the same API under its new name [*]",
]
FULL = (
    f"{CONCISE[0].replace(': JAX601 ', ': JAX601 [warning] ')}\n"
    "  |\n"
    "2 | import jax.numpy as np\n"
    "  |        ^^^^^^^^^^^^^^^\n"
    "  = help: Import jax.numpy as jnp and rename its uses\n"
    "2 - import jax.numpy as np\n"
    "2 + import jax.numpy as jnp\n"
    "6 -     return jax.tree_map(np.abs, t)\n"
    "6 +     return jax.tree_map(jnp.abs, t)\n"
    "\n"
    f"{CONCISE[1].replace(': JAX602 ', ': JAX602 [warning] ')}\n"
    "  |\n"
    "6 |     return jax.tree_map(np.abs, t)\n"
    "  |            ^^^^^^^^^^^^\n"
    "  = help: Use jax.tree.map\n"
    "6 -     return jax.tree_map(np.abs, t)\n"
    "6 +     return jax.tree.map(np.abs, t)\n"
)


@pytest.fixture
def bad(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def test_piped_default_is_concise_and_text_is_its_alias(bad, run_cli):
    default = run_cli("check", "--no-cache", "bad.py")
    assert default.returncode == 1
    assert default.stdout.splitlines() == CONCISE
    assert default.stderr.startswith("Found 2 findings (2 warnings) in 1 file")
    for name in ("concise", "text"):
        assert run_cli("check", "--no-cache", "--output-format", name, "bad.py").stdout == default.stdout


def test_full_snapshot_with_summary_on_stderr(bad, run_cli):
    result = run_cli("check", "--no-cache", "--output-format", "full", "bad.py")
    assert result.returncode == 1
    assert result.stdout == FULL
    assert result.stderr.startswith("Found 2 findings (2 warnings) in 1 file")


def test_force_color_colours_a_pipe_and_no_color_wins(bad, run_cli):
    forced = run_cli("check", "--no-cache", "--output-format", "full", "bad.py", env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert forced.stdout.startswith("\x1b[1mbad.py:2:8\x1b[0m: \x1b[1;33mJAX601\x1b[0m \x1b[1;33m[warning]\x1b[0m")
    both = run_cli("check", "--no-cache", "--output-format", "full", "bad.py", env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert both.stdout == FULL
    # concise output is never coloured
    concise = run_cli("check", "--no-cache", "bad.py", env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert concise.stdout.splitlines() == CONCISE


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_terminal_default_is_full_and_coloured(bad):
    import pty

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CI")}
    env["TERM"] = "xterm"
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    main, child = pty.openpty()
    try:
        process = subprocess.Popen([sys.executable, "-m", "jaxlint", "check", "--no-cache", "--quiet", "bad.py"],
                                   cwd=bad, stdout=child, stderr=subprocess.DEVNULL, env=env)
        os.close(child)
        child = None
        chunks = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not select.select([main], [], [], 1)[0]:
                continue
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other end closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        try:
            assert process.wait(timeout=5) == 1
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    finally:
        if child is not None:
            os.close(child)
        os.close(main)
    text = b"".join(chunks).decode().replace("\r\n", "\n")
    assert "\x1b[1;33m[warning]\x1b[0m" in text
    assert re.sub(r"\x1b\[[0-9;]*m", "", text) == FULL
