"""What the checked code may reach: the environment it inherits, the network, and `/dev/shm`.

- **Environment**: the worker gets jaxlint's environment without the variables that look like
  credentials (`*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*_KEY`, cloud and CI credentials); JAX's,
  XLA's and CUDA's own settings are kept. `pass-env` names variables to keep all the same.
- **Network and `/dev/shm`** (Linux): the worker leaves jaxlint's network namespace for an empty
  one (no interface but a loopback that is down: no connection can be made, not even to
  127.0.0.1), and gets a private `/dev/shm` (a tmpfs no larger than the memory limit, gone with
  the worker). Both need a user namespace, which the kernel may refuse to an unprivileged user;
  then what could not be isolated is reported (`Isolation.missing`) and the run goes on.

Nothing here imports JAX or the user's code.
"""
from __future__ import annotations

import ctypes
import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field

#: Variables that look like credentials: a token, a secret, a password, a private or access key.
_CREDENTIAL = re.compile(
    r"TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|CREDENTIAL|(^|_)(API|ACCESS|PRIVATE|SECRET|SESSION|AUTH|SIGNING|"
    r"ENCRYPTION|MASTER|DEPLOY|SSH)_?KEY|(^|_)KEY$|_KEY_|(^|_)O?AUTH(_|$)|COOKIE|(^|_)DSN$|WEBHOOK", re.IGNORECASE)
#: Whole families of credentials: cloud providers, CI systems, package registries.
_CREDENTIAL_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS", "GCLOUD_", "CLOUDSDK_AUTH",
                        "GH_", "GITHUB_TOKEN", "ACTIONS_ID_TOKEN", "ACTIONS_RUNTIME", "CI_JOB_TOKEN",
                        "NPM_", "PYPI_", "TWINE_", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API",
                        "SSH_AUTH_SOCK", "DOCKER_AUTH", "KUBECONFIG", "VAULT_", "DATABASE_URL")
#: JAX, XLA, CUDA and the interpreter's own settings: never taken for credentials.
_KEPT_PREFIXES = ("JAX_", "XLA_", "TF_", "CUDA_", "NVIDIA_", "NCCL_", "TPU_", "LIBTPU_", "ROCM_", "HIP_",
                  "PYTHON", "LD_", "PATH", "HOME", "LANG", "LC_", "TMPDIR", "TEMP", "TMP",
                  "TOKENIZERS_", "KEYBOARD")


def is_credential(name: str) -> bool:
    """Whether an environment variable's name looks like a credential."""
    upper = name.upper()
    if upper.startswith(_KEPT_PREFIXES):
        return False
    return upper.startswith(_CREDENTIAL_PREFIXES) or bool(_CREDENTIAL.search(upper))


def scrubbed(environment: dict[str, str], passed: tuple[str, ...] = ()) -> tuple[dict[str, str], list[str]]:
    """The environment without credentials, and the names left out (sorted). `passed`: names or
    glob patterns (`MY_*`) of variables kept all the same."""
    kept, dropped = {}, []
    for name, value in environment.items():
        if is_credential(name) and not any(fnmatch.fnmatchcase(name, pattern) for pattern in passed):
            dropped.append(name)
        else:
            kept[name] = value
    return kept, sorted(dropped)


# -- namespaces ------------------------------------------------------------------------------------
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
SHM = "/dev/shm"


@dataclass
class Isolation:
    """What `isolate` achieved: `missing` names what is not isolated, with the kernel's reason."""

    network_cut: bool = False  # the checked code cannot reach any network
    shm_private: bool = False  # /dev/shm is its own, sized and discarded with it
    missing: list[str] = field(default_factory=list)


def isolate(memory_mib: int, network: bool) -> Isolation:
    """In the worker, before any user code: leave the network (unless `network` is allowed) and
    get a private `/dev/shm` of at most `memory_mib` MiB. Must run single-threaded (a user
    namespace cannot be entered otherwise)."""
    result = Isolation()
    if not sys.platform.startswith("linux"):
        result.missing.append("network and /dev/shm: namespaces are Linux only")
        return result
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        result.missing.append(f"network and /dev/shm: {exc}")
        return result
    net = 0 if network else _CLONE_NEWNET
    # A user namespace lets an unprivileged user make the others; a privileged one needs none.
    attempts = [(net | _CLONE_NEWNS, True), (net | _CLONE_NEWNS, False)]
    if net:
        attempts += [(net, True), (net, False)]  # the network at least, where mounts are refused
    errors = []
    for flags, user in attempts:
        error = _unshare(libc, flags | (_CLONE_NEWUSER if user else 0), user)
        if error is None:
            break
        errors.append(error)
    else:
        what = "/dev/shm" if network else "network and /dev/shm"
        result.missing.append(f"{what}: the kernel refused a namespace ({errors[0]})")
        return result
    result.network_cut = bool(net)
    if not flags & _CLONE_NEWNS:
        result.missing.append(f"/dev/shm: the kernel refused a mount namespace ({errors[0]})")
        return result
    shm_error = _private_shm(libc, memory_mib)
    if shm_error is None:
        result.shm_private = True
    else:
        result.missing.append(f"/dev/shm: {shm_error}")
    return result


def _unshare(libc, flags: int, user: bool) -> str | None:
    if flags == 0:
        return None
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(flags) != 0:
        return os.strerror(ctypes.get_errno())
    if user:  # the same ids inside as outside: files it writes, processes it signals, as before
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError as exc:
            return f"uid map: {exc.strerror}"
    return None


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text)


def _private_shm(libc, memory_mib: int) -> str | None:
    if not os.path.isdir(SHM):
        return "no /dev/shm here"
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return f"mounts could not be made private ({os.strerror(ctypes.get_errno())})"
    size = f"size={memory_mib}m," if memory_mib and memory_mib > 0 else ""
    options = f"{size}mode=1777".encode()
    if libc.mount(b"tmpfs", SHM.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        return f"no tmpfs could be mounted on it ({os.strerror(ctypes.get_errno())})"
    return None


def shm_files(pids: list[int]) -> set[str]:
    """The `/dev/shm` files the processes hold open or mapped now (where /dev/shm is shared)."""
    found: set[str] = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith(SHM + "/"):
                    found.add(target.removesuffix(" (deleted)"))
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    index = line.find(SHM + "/")
                    if index >= 0:
                        found.add(line[index:].rstrip("\n").removesuffix(" (deleted)"))
        except OSError:
            continue
    return found
