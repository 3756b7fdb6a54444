"""Build (once) and cache a real kube-apiserver v1.20.2 from Debian's source package.

Recipe: ../shared/notes/real-kube-apiserver.md. Everything comes from Debian's registry.
The binary (110 MB) is cached at ``$FTSPEC_CACHE_DIR/envtest/kube-apiserver-v1.20.2``
(default ``~/.cache/ftspec/envtest/``). The build tree (1.7 GiB, including the Go build cache that
Kubernetes' make keeps under ``_output/``) is deleted after a successful build: the binary is the cache.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from harness.procs import log, tail

KUBE_VERSION = "v1.20.2"
# No fixed kill timer by default: a loaded 2-core machine once hit a 1200 s one while the build
# was still making progress. FTSPEC_BUILD_TIMEOUT_S sets one when a caller wants it.
DEFAULT_BUILD_TIMEOUT_S: float | None = None
# A 1.20 source tree builds with Debian's Go 1.19, named explicitly: the versioned package
# installs no /usr/bin/go, and the machine's own (newer) Go is first on PATH.
GO_1_19_BIN = Path("/usr/lib/go-1.19/bin")
APT_PACKAGES = ("golang-1.19-go", "etcd-server", "rsync", "golang-github-modern-go-reflect2-dev", "openssl")
REFLECT2_DEBIAN = Path("/usr/share/gocode/src/github.com/modern-go/reflect2")
DEBIAN_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
DEB_SRC_SOURCES = Path("/etc/apt/sources.list.d/ftspec-debian-src.sources")


class BuildError(RuntimeError):
    """The kube-apiserver build (or a package step before it) failed."""


def cache_root() -> Path:
    return Path(os.environ.get("FTSPEC_CACHE_DIR") or Path.home() / ".cache" / "ftspec")


def envtest_dir() -> Path:
    return cache_root() / "envtest"


def apiserver_binary() -> Path:
    return envtest_dir() / f"kube-apiserver-{KUBE_VERSION}"


def etcd_binary() -> Path | None:
    found = shutil.which("etcd")
    return Path(found) if found else None


def binary_works(path: Path) -> bool:
    """True if ``path`` runs and reports the expected version."""
    if not path.is_file() or not os.access(path, os.X_OK):
        return False
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and KUBE_VERSION in out.stdout


def is_ready() -> bool:
    """Binary cached and runnable, and etcd/openssl installed: ``KubeCluster`` can start."""
    return binary_works(apiserver_binary()) and etcd_binary() is not None and shutil.which("openssl") is not None


# --------------------------------------------------------------------------- helpers


class _Deadline:
    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.end = None if seconds is None else time.monotonic() + seconds

    def left(self, what: str) -> float | None:
        if self.end is None:
            return None
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise BuildError(f"kube-apiserver build timed out after {self.seconds:.0f} s (during: {what})")
        return remaining


def _run(
    cmd: Sequence[str],
    deadline: _Deadline,
    *,
    what: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    log_file: Path | None = None,
) -> None:
    """Run ``cmd`` in its own process group; kill that group on timeout."""
    log(f"{what}: {' '.join(cmd)}")
    timeout = deadline.left(what)
    out_path = log_file or (envtest_dir() / "last-step.log")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("wb") as out:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise BuildError(
                f"kube-apiserver build timed out after {deadline.seconds:.0f} s during {what}; log: {out_path}"
            ) from None
    if rc != 0:
        raise BuildError(f"{what} failed (exit {rc}); log: {out_path}\n{tail(out_path)}")


def _privileged(cmd: Sequence[str]) -> list[str]:
    if os.geteuid() == 0:
        return list(cmd)
    sudo = shutil.which("sudo")
    if sudo is None:
        raise BuildError(f"need root (or sudo) to run: {' '.join(cmd)}")
    return [sudo, "-n", *cmd]


def _has_deb_src() -> bool:
    files = list(Path("/etc/apt/sources.list.d").glob("*.sources"))
    for path in files:
        for line in path.read_text().splitlines():
            if line.strip().startswith("Types:") and "deb-src" in line.split():
                return True
    legacy = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*.list")]
    return any(
        line.strip().startswith("deb-src ") for p in legacy if p.is_file() for line in p.read_text().splitlines()
    )


def _add_deb_src(deadline: _Deadline) -> None:
    if not DEBIAN_SOURCES.is_file():
        raise BuildError(f"{DEBIAN_SOURCES} not found: cannot derive a deb-src entry (add one by hand)")
    text = "\n".join(
        "Types: deb-src" if line.strip().startswith("Types:") else line
        for line in DEBIAN_SOURCES.read_text().splitlines()
    )
    log(f"adding {DEB_SRC_SOURCES} (deb-src copy of {DEBIAN_SOURCES})")
    tmp = envtest_dir() / "deb-src.sources.tmp"
    tmp.write_text(text + "\n")
    try:
        _run(_privileged(["cp", str(tmp), str(DEB_SRC_SOURCES)]), deadline, what="install deb-src list")
    finally:
        tmp.unlink()


def _missing_packages() -> list[str]:
    checks = {
        "golang-1.19-go": (GO_1_19_BIN / "go").is_file(),
        "etcd-server": shutil.which("etcd") is not None,
        "rsync": shutil.which("rsync") is not None,
        "golang-github-modern-go-reflect2-dev": REFLECT2_DEBIAN.is_dir(),
        "openssl": shutil.which("openssl") is not None,
        "dpkg-dev": shutil.which("dpkg-source") is not None,
        "make": shutil.which("make") is not None,
    }
    return [pkg for pkg, ok in checks.items() if not ok]


def ensure_packages(deadline: _Deadline) -> None:
    """deb-src entry, ``apt-get update`` when needed, and the build/run packages."""
    apt_env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    need_update = False
    if not _has_deb_src():
        _add_deb_src(deadline)
        need_update = True
    if not any(Path("/var/lib/apt/lists").glob("*_Sources*")):
        need_update = True
    missing = _missing_packages()
    if missing:
        need_update = True
    if need_update:
        _run(_privileged(["apt-get", "update"]), deadline, what="apt-get update", env=apt_env)
    if missing:
        _run(
            _privileged(["apt-get", "install", "-y", "--no-install-recommends", *sorted({*APT_PACKAGES, *missing})]),
            deadline,
            what="apt-get install",
            env=apt_env,
        )


@contextmanager
def _build_lock(deadline: _Deadline) -> Iterator[None]:
    lock_path = envtest_dir() / ".build.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as handle:
        announced = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not announced:
                    log(f"another build holds {lock_path}; waiting")
                    announced = True
                deadline.left("waiting for the build lock")
                time.sleep(2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _du_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue
    return total


# --------------------------------------------------------------------------- build


def build(timeout_s: float | None = None, *, keep_build_tree: bool = False) -> Path:
    """Ensure a cached, working kube-apiserver binary and etcd; return the binary path.

    Idempotent and cheap when the binary is cached. Parallel callers serialise on a file lock.
    Raises ``BuildError`` with the failing step's log tail, or on the overall timeout
    (none by default; env ``FTSPEC_BUILD_TIMEOUT_S`` sets one).
    """
    binary = apiserver_binary()
    if is_ready():
        return binary
    env_timeout = os.environ.get("FTSPEC_BUILD_TIMEOUT_S")
    seconds = timeout_s if timeout_s is not None else (float(env_timeout) if env_timeout else DEFAULT_BUILD_TIMEOUT_S)
    deadline = _Deadline(seconds)
    envtest_dir().mkdir(parents=True, exist_ok=True)
    with _build_lock(deadline):
        if is_ready():  # another process finished the build while we waited
            return binary
        started = time.monotonic()
        ensure_packages(deadline)
        if not binary_works(binary):
            _build_apiserver(binary, deadline, keep_build_tree=keep_build_tree)
        log(f"kube-apiserver {KUBE_VERSION} ready at {binary} ({time.monotonic() - started:.0f} s)")
    return binary


def _build_apiserver(binary: Path, deadline: _Deadline, *, keep_build_tree: bool) -> None:
    build_dir = envtest_dir() / f"build-{KUBE_VERSION}"
    build_dir.mkdir(parents=True, exist_ok=True)
    # A previous attempt may have left a half-built tree; the downloaded tarballs are reused.
    for old in build_dir.glob("kubernetes-*"):
        if old.is_dir():
            log(f"removing stale source tree {old}")
            shutil.rmtree(old)
    _run(
        ["apt-get", "source", "kubernetes"],
        deadline,
        what="apt-get source kubernetes",
        cwd=build_dir,
        log_file=build_dir / "apt-source.log",
    )
    trees = [p for p in build_dir.glob("kubernetes-*") if p.is_dir()]
    if len(trees) != 1:
        raise BuildError(f"expected one unpacked kubernetes-* tree in {build_dir}, found {trees}")
    src = trees[0]

    log("replacing vendored reflect2 (v1.0.1 crashes under Go 1.19) with Debian's")
    vendored = src / "vendor/github.com/modern-go/reflect2"
    shutil.rmtree(vendored)
    shutil.copytree(REFLECT2_DEBIAN, vendored, symlinks=False)

    gopath = src / ".go"
    (gopath / "src/k8s.io").mkdir(parents=True, exist_ok=True)
    link = gopath / "src/k8s.io/kubernetes"
    if not link.is_symlink():
        link.symlink_to("../../..")
    version_file = build_dir / "version.env"
    version_file.write_text(
        f"KUBE_GIT_VERSION='{KUBE_VERSION}'\nKUBE_GIT_TREE_STATE='clean'\nKUBE_GIT_MAJOR='1'\nKUBE_GIT_MINOR='20'\n"
    )
    home = build_dir / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": f"{GO_1_19_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "GOPATH": str(gopath),
        "CGO_ENABLED": "0",
        "KUBE_GIT_VERSION_FILE": str(version_file),
        "LANG": "C.UTF-8",
    }
    make_log = build_dir / "make.log"
    started = time.monotonic()
    _run(
        ["make", "WHAT=cmd/kube-apiserver"],
        deadline,
        what="make WHAT=cmd/kube-apiserver (≈5 min cold)",
        cwd=src,
        env=env,
        log_file=make_log,
    )
    log(f"make finished in {time.monotonic() - started:.0f} s")
    built = src / "_output/bin/kube-apiserver"
    if not built.is_file():
        raise BuildError(f"make succeeded but {built} is missing; log: {make_log}")
    tmp = binary.with_name(binary.name + ".tmp")
    shutil.copy2(built, tmp)
    os.replace(tmp, binary)
    if not binary_works(binary):
        raise BuildError(f"built binary {binary} does not report {KUBE_VERSION} on --version")
    if keep_build_tree:
        log(f"keeping build tree {build_dir} ({_du_bytes(build_dir) / 2**30:.1f} GiB)")
    else:
        size = _du_bytes(build_dir)
        shutil.rmtree(build_dir)
        log(f"removed build tree {build_dir} ({size / 2**30:.1f} GiB)")
