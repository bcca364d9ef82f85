"""The repository's image built with podman, and podman as this machine can run it.

The base image, ``debian:bookworm-slim``, is pulled when a registry serves it, else built from
Debian's packages (``deploy/base-image.sh``); a proxy's CA that this machine trusts (Debian's
``/usr/local/share/ca-certificates``) is given to the build for pip and Maven. The build runs in
chroot isolation with the host's network, the containers under runc with the host's limits:
podman's defaults (crun, a million open files) cannot start a container in a sandbox such as
this one (cgroups in hybrid mode, lower hard limits). Layers are cached in podman's storage, so
a build after a code change redoes the project's install, not its dependencies.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"localhost/adtech-profiles:{VERSION}"
LOCAL_CAS = Path("/usr/local/share/ca-certificates")
PODMAN_GLOBAL_OPTIONS = ["--runtime", "runc", "--cgroup-manager", "cgroupfs"]
PODMAN = ["podman", *PODMAN_GLOBAL_OPTIONS]
INSTALL = "apt-get install -y podman runc debootstrap"


class ImageToolsMissing(RuntimeError):
    """podman, runc or debootstrap is not installed."""


def host_limits() -> list[str]:
    """``--ulimit`` options within this machine's limits: podman's defaults (a million open
    files, as many processes as the host allows) are refused here; 4,096 processes are plenty
    for one role."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    files = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    return ["--ulimit", f"nofile={files}:{files}", "--ulimit", "nproc=4096:4096"]


def podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)


def run_in_image(*command: str) -> subprocess.CompletedProcess:
    return podman("run", "--rm", "--network", "host", *host_limits(), IMAGE, *command)


def build_image(scratch: Path) -> str:
    """The base image, then the repository's (``docs/deploying.md``, steps 2 and 3)."""
    missing = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    if missing:
        raise ImageToolsMissing(f"the image tests need {', '.join(missing)} (Debian: {INSTALL})")
    base = subprocess.run(
        [str(REPO / "deploy" / "base-image.sh")], capture_output=True, text=True, timeout=1200
    )
    assert base.returncode == 0, base.stdout[-3000:] + base.stderr[-3000:]
    build = [*PODMAN, "build", "--isolation", "chroot", "--network", "host", "-t", IMAGE]
    cas = sorted(LOCAL_CAS.glob("*.crt"))
    if cas:
        bundle = scratch / "extra-ca.pem"
        bundle.write_text("".join(ca.read_text() for ca in cas))
        build += ["--secret", f"id=extra-ca,src={bundle}"]
    built = subprocess.run([*build, str(REPO)], capture_output=True, text=True, timeout=3600)
    assert built.returncode == 0, built.stdout[-5000:] + built.stderr[-3000:]
    return IMAGE
