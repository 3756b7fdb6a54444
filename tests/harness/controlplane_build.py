"""Build (once per pin set) a current Kubernetes control plane and the real ML controllers.

Everything comes from the Go module proxy, at the versions pinned in ``PINS``:

- ``k8s.io/kubernetes``: kube-apiserver, kube-controller-manager (Job controller, garbage
  collector), kube-scheduler and kubectl. Its go.mod points every staging module
  (``k8s.io/api`` …) at ``./staging/src/…``, so it cannot be ``go install``ed; a small wrapper
  module requires it and pins each staging module to the matching ``v0.X.Y`` with ``replace``
  lines generated from the ``.mod`` file the proxy serves.
- etcd (``go.etcd.io/etcd/server/v3``, the version Kubernetes itself requires),
- Kubeflow Trainer's controller manager, JobSet's and kwok's, in the same wrapper module (they
  compile against the same Kubernetes minor, so one build shares every common package);
- the KubeRay operator in a wrapper of its own (it pins an older controller-runtime).

The binaries land in ``$FTSPEC_CACHE_DIR/controlplane/<key>/bin`` (default
``~/.cache/ftspec/``), where ``<key>`` hashes the pins, this script's recipe and the Go version:
a rebuild happens only when one of them changes. There is no fixed kill timer (a loaded 2-core
machine may take long, and the build only ever makes progress); a lock file keeps two test
processes from building at once. The manifests the tests install (CRDs, webhook
configurations, runtimes, kwok stages) are read from the same module cache by
``controlplane_files``, so they are exactly the versions the binaries come from.

We write this script ourselves because no packaged tool builds these binaries from the module
proxy: envtest's ``setup-envtest`` downloads prebuilt binaries (unreachable here) and ships no
controller-manager or scheduler.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

GO = "/usr/local/go/bin/go"  # the preinstalled toolchain, never Debian's golang-go


@dataclass(frozen=True)
class Pins:
    kubernetes: str = "v1.36.3"
    etcd: str = "v3.6.8"  # what k8s.io/kubernetes v1.36.3 requires
    trainer: str = "v2.3.0"
    jobset: str = "v0.12.0"
    kwok: str = "v0.8.0"
    kuberay: str = "v1.6.1"  # the newest the module proxy serves here (v1.7.0's zip is refused)

    @property
    def staging(self) -> str:
        """The staging modules' version: v1.36.3 -> v0.36.3."""
        return "v0" + self.kubernetes[2:]


PINS = Pins()
RECIPE_VERSION = "1"

KUBERNETES = "k8s.io/kubernetes"
TRAINER = "github.com/kubeflow/trainer/v2"
JOBSET = "sigs.k8s.io/jobset"
KWOK = "sigs.k8s.io/kwok"
KUBERAY = "github.com/ray-project/kuberay/ray-operator"
ETCD = "go.etcd.io/etcd/server/v3"

# binary name -> main package, built in the shared wrapper module
MAIN_BINARIES: dict[str, str] = {
    "kube-apiserver": f"{KUBERNETES}/cmd/kube-apiserver",
    "kube-controller-manager": f"{KUBERNETES}/cmd/kube-controller-manager",
    "kube-scheduler": f"{KUBERNETES}/cmd/kube-scheduler",
    "kubectl": f"{KUBERNETES}/cmd/kubectl",
    "etcd": ETCD,
    "trainer-controller-manager": f"{TRAINER}/cmd/trainer-controller-manager",
    "jobset-controller-manager": JOBSET,
    "kwok": f"{KWOK}/cmd/kwok",
}
KUBERAY_BINARY = "kuberay-operator"
BINARIES = (*MAIN_BINARIES, KUBERAY_BINARY)


class BuildError(RuntimeError):
    """A step of the control-plane build failed; the message names the command and its output."""


def cache_root() -> Path:
    return Path(os.environ.get("FTSPEC_CACHE_DIR") or Path.home() / ".cache" / "ftspec")


def go_version() -> str:
    out = subprocess.run([GO, "env", "GOVERSION"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def build_key(pins: Pins = PINS) -> str:
    material = json.dumps({"pins": pins.__dict__, "recipe": RECIPE_VERSION, "go": go_version()}, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def build_dir(pins: Pins = PINS) -> Path:
    return cache_root() / "controlplane" / build_key(pins)


def bin_dir(pins: Pins = PINS) -> Path:
    return build_dir(pins) / "bin"


def is_built(pins: Pins = PINS) -> bool:
    return (build_dir(pins) / "BUILT").is_file() and all((bin_dir(pins) / name).is_file() for name in BINARIES)


def binary(name: str, pins: Pins = PINS) -> Path:
    return bin_dir(pins) / name


def module_dir(module: str, version: str) -> Path:
    """The module's source in the Go module cache (downloaded on first use)."""
    out = _go(["mod", "download", "-json", f"{module}@{version}"], cwd=Path.cwd(), what=f"download {module}@{version}")
    info = json.loads(out)
    if info.get("Error"):
        raise BuildError(f"go mod download {module}@{version}: {info['Error']}")
    return Path(info["Dir"])


# --------------------------------------------------------------------------- build steps


def staging_replaces(pins: Pins) -> list[str]:
    """``replace`` lines pinning each staging module named in Kubernetes' go.mod to its release."""
    gomod = _go(["mod", "download", "-json", f"{KUBERNETES}@{pins.kubernetes}"], cwd=Path.cwd(), what="download kubernetes")
    mod_text = Path(json.loads(gomod)["GoMod"]).read_text(encoding="utf-8")
    staged = re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", mod_text, re.MULTILINE)
    if not staged:
        raise BuildError(f"{KUBERNETES}@{pins.kubernetes}: no staging replace lines in its go.mod")
    return [f"\t{module} => {module} {pins.staging}" for module in staged]


def _wrapper_gomod(module: str, requires: dict[str, str], replaces: Sequence[str]) -> str:
    req = "\n".join(f"\t{m} {v}" for m, v in requires.items())
    rep = "\n".join(replaces)
    return f"module {module}\n\ngo 1.26.0\n\nrequire (\n{req}\n)\n" + (f"\nreplace (\n{rep}\n)\n" if replaces else "")


def _tools_go(packages: Sequence[str]) -> str:
    imports = "\n".join(f'\t_ "{p}"' for p in packages)
    return f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"


def _kube_ldflags(pins: Pins) -> str:
    major, minor = pins.kubernetes[1:].split(".")[:2]
    pkg = "k8s.io/component-base/version"
    client = "k8s.io/client-go/pkg/version"
    flags = ["-s", "-w"]
    for p in (pkg, client):
        flags += [
            f"-X {p}.gitVersion={pins.kubernetes}",
            f"-X {p}.gitMajor={major}",
            f"-X {p}.gitMinor={minor}",
            f"-X {p}.gitTreeState=clean",
        ]
    return " ".join(flags)


def default_binary_name(package: str) -> str:
    """The file ``go build -o DIR/`` writes for a main package: its last path element, or the one
    before a major-version suffix (``go.etcd.io/etcd/server/v3`` -> ``server``)."""
    parts = package.split("/")
    return parts[-2] if re.fullmatch(r"v\d+", parts[-1]) and len(parts) > 1 else parts[-1]


def build_wrapper(src: Path, module: str, requires: dict[str, str], replaces: Sequence[str], mains: dict[str, str], out: Path, ldflags: str) -> None:
    """Write the wrapper module, resolve it, and build every main package in one ``go build``
    (one invocation compiles the packages they share once, with all cores)."""
    src.mkdir(parents=True, exist_ok=True)
    (src / "go.mod").write_text(_wrapper_gomod(module, requires, replaces), encoding="utf-8")
    (src / "tools.go").write_text(_tools_go(sorted(set(mains.values()))), encoding="utf-8")
    _go(["mod", "tidy"], cwd=src, what=f"go mod tidy ({module})")
    out.mkdir(parents=True, exist_ok=True)
    scratch = out / ".go-build-out"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    started = time.monotonic()
    _log(f"building {', '.join(mains)}")
    _go(["build", "-trimpath", f"-ldflags={ldflags}", "-o", f"{scratch}/", *mains.values()], cwd=src, what=f"go build ({module})")
    for name, pkg in mains.items():
        (scratch / default_binary_name(pkg)).rename(out / name)
    scratch.rmdir()
    _log(f"built {', '.join(mains)} in {time.monotonic() - started:.0f} s")


def build(pins: Pins = PINS, *, force: bool = False) -> Path:
    """Build every binary unless the cache for these pins is complete; return the bin folder."""
    target = build_dir(pins)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _lock(target.parent / f"{target.name}.lock"):
        if is_built(pins) and not force:
            return bin_dir(pins)
        started = time.monotonic()
        staging = bin_dir(pins).with_name("bin.partial")
        shutil.rmtree(staging, ignore_errors=True)
        main_requires = {
            KUBERNETES: pins.kubernetes,
            ETCD: pins.etcd,
            TRAINER: pins.trainer,
            JOBSET: pins.jobset,
            KWOK: pins.kwok,
        }
        build_wrapper(
            target / "src-main",
            "ftspec.test/controlplane",
            main_requires,
            staging_replaces(pins),
            MAIN_BINARIES,
            staging,
            _kube_ldflags(pins),
        )
        build_wrapper(
            target / "src-kuberay",
            "ftspec.test/kuberay",
            {KUBERAY: pins.kuberay},
            [],
            {KUBERAY_BINARY: KUBERAY},
            staging,
            "-s -w",
        )
        shutil.rmtree(bin_dir(pins), ignore_errors=True)
        staging.rename(bin_dir(pins))
        (target / "BUILT").write_text(
            json.dumps({"pins": pins.__dict__, "go": go_version(), "seconds": round(time.monotonic() - started)}) + "\n",
            encoding="utf-8",
        )
        _log(f"control plane built in {time.monotonic() - started:.0f} s -> {bin_dir(pins)}")
        return bin_dir(pins)


# --------------------------------------------------------------------------- helpers


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    # the preinstalled Go first; Debian's golang-go must not shadow it
    env["PATH"] = f"{Path(GO).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("GOFLAGS", "-mod=mod")
    env["CGO_ENABLED"] = "0"
    env["GOTOOLCHAIN"] = "local"
    return env


def _go(args: Sequence[str], *, cwd: Path, what: str) -> str:
    proc = subprocess.run([GO, *args], cwd=cwd, env=_go_env(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-40:])
        raise BuildError(f"{what} failed (exit {proc.returncode}): go {' '.join(args)}\n{tail}")
    return proc.stdout


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _log(message: str) -> None:
    print(f"[controlplane] {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build (or reuse) the pinned control plane")
    b.add_argument("--force", action="store_true")
    sub.add_parser("path", help="print the bin folder")
    args = parser.parse_args(argv)
    if args.cmd == "path":
        print(bin_dir())
        return 0 if is_built() else 1
    try:
        print(build(force=args.force))
    except BuildError as exc:
        print(f"control-plane build failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
