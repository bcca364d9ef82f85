"""Jars from Maven Central, resolved once into a cache outside the repository.

Apache HBase (for the conformance suite and ``make hbase``) and Hadoop's S3A connector (for
Spark's own reads and writes of an S3 lake) are Java artifacts this project does not ship. Maven
resolves each set with its runtime dependencies into ``$PROFILES_CACHE_DIR/<name>/lib`` (default
``~/.cache/adtech-profiles``); a ``.complete`` marker is written last, so an interrupted
resolution is redone, never used.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>adtech-profiles</groupId>
  <artifactId>{name}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{dependencies}
  </dependencies>
</project>
"""
_DEPENDENCY = (
    "    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
    "<version>{version}</version>{exclusions}</dependency>"
)
_EXCLUSION = "<exclusion><groupId>{group}</groupId><artifactId>{artifact}</artifactId></exclusion>"


class JarResolutionError(RuntimeError):
    """Maven is missing, or could not resolve the artifacts; the message holds its output."""


def cache_root() -> Path:
    """Where resolved jars live: ``$PROFILES_CACHE_DIR``, else ``~/.cache/adtech-profiles``."""
    configured = os.environ.get("PROFILES_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "adtech-profiles"


def _dependency(coordinate: str, exclude: Sequence[str]) -> str:
    group, artifact, version = coordinate.split(":")
    exclusions = "".join(
        _EXCLUSION.format(group=g, artifact=a) for g, a in (e.split(":") for e in exclude)
    )
    return _DEPENDENCY.format(
        group=group,
        artifact=artifact,
        version=version,
        exclusions=f"<exclusions>{exclusions}</exclusions>" if exclusions else "",
    )


def resolve_jars(
    name: str,
    coordinates: Sequence[str],
    *,
    exclude: Sequence[str] = (),
    cache: Path | None = None,
) -> list[Path]:
    """The jars of ``coordinates`` (``group:artifact:version``) and their runtime dependencies.

    ``exclude`` (``group:artifact``) leaves out transitive dependencies the caller already has
    on its class path (e.g. the Hadoop client jars that pyspark bundles).
    """
    home = (cache or cache_root()) / name
    lib = home / "lib"
    if not (home / ".complete").exists():
        home.mkdir(parents=True, exist_ok=True)
        # Two processes resolving at once (two test workers, two `make hbase`) would delete
        # each other's jars: the second waits for the first, then finds the set complete.
        with open(home / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (home / ".complete").exists():
                _resolve(name, coordinates, exclude, home, lib)
    return sorted(lib.glob("*.jar"))


def _resolve(
    name: str, coordinates: Sequence[str], exclude: Sequence[str], home: Path, lib: Path
) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError(
            f"Maven (mvn) is needed once to resolve {name}'s jars from Maven Central "
            "(Debian: apt-get install -y maven)"
        )
    dependencies = "\n".join(_dependency(c, exclude) for c in coordinates)
    (home / "pom.xml").write_text(_POM.format(name=name, dependencies=dependencies))
    shutil.rmtree(lib, ignore_errors=True)
    print(f"resolving {name} from Maven Central into {home} ...", flush=True)
    result = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "-f",
            str(home / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={lib}",
            "-DincludeScope=runtime",
        ],
        capture_output=True,
        text=True,
    )
    wanted = [c.split(":")[1] for c in coordinates]
    missing = [a for a in wanted if not any(lib.glob(f"{a}-*.jar"))]
    if result.returncode != 0 or missing:
        raise JarResolutionError(
            f"Maven could not resolve {', '.join(coordinates)} (exit {result.returncode}):\n"
            + (result.stdout + result.stderr)[-4000:]
        )
    (home / ".complete").write_text("\n".join(coordinates) + "\n")
