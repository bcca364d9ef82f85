"""Where the lake lives: a local directory or an S3 prefix, behind one small interface.

Spark reads and writes the lake through Hadoop file-system URIs; everything else (listing the
landing area, markers, small side files) goes through this interface so that the same code
serves a laptop and a bucket. ``spark_uri`` is the bridge between the two views.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse


@dataclass(frozen=True)
class LakeFile:
    """A file in the lake, addressed relative to the lake root."""

    path: str
    size: int
    modified_ms: int


class LakeStorage(Protocol):
    """Operations on the lake that are not Spark jobs."""

    root: str

    def spark_uri(self, relative: str = "") -> str: ...

    def list_files(self, relative: str) -> list[LakeFile]: ...

    def exists(self, relative: str) -> bool: ...

    def read_bytes(self, relative: str) -> bytes: ...

    def write_bytes(self, relative: str, data: bytes) -> None: ...

    def delete_tree(self, relative: str) -> None: ...

    def move(self, relative: str, to: str) -> None: ...


def _join(root: str, relative: str) -> str:
    relative = relative.strip("/")
    if not relative:
        return root.rstrip("/")
    return f"{root.rstrip('/')}/{relative}"


class LocalLakeStorage:
    """The lake as a directory on this machine (the embedded default)."""

    def __init__(self, root: str | Path) -> None:
        self.root = str(Path(root).expanduser().resolve())

    def _path(self, relative: str) -> Path:
        return Path(_join(self.root, relative))

    def spark_uri(self, relative: str = "") -> str:
        return "file://" + _join(self.root, relative)

    def list_files(self, relative: str) -> list[LakeFile]:
        base = self._path(relative)
        if not base.is_dir():
            return []
        files = []
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            stat = path.stat()
            files.append(
                LakeFile(
                    path=str(path.relative_to(self.root)),
                    size=stat.st_size,
                    modified_ms=int(stat.st_mtime * 1000),
                )
            )
        return files

    def exists(self, relative: str) -> bool:
        return self._path(relative).exists()

    def read_bytes(self, relative: str) -> bytes:
        return self._path(relative).read_bytes()

    def write_bytes(self, relative: str, data: bytes) -> None:
        path = self._path(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)

    def delete_tree(self, relative: str) -> None:
        path = self._path(relative)
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()

    def move(self, relative: str, to: str) -> None:
        """A rename: atomic within the lake's file system."""
        target = self._path(to)
        target.parent.mkdir(parents=True, exist_ok=True)
        self._path(relative).replace(target)


# Empty objects Hadoop file systems write to stand for directories: S3A's ``dir/`` and EMRFS's
# ``dir_$folder$``. They are not files of the lake.
_DIRECTORY_MARKER_SUFFIXES = ("/", "_$folder$")


class S3LakeStorage:
    """The lake under an S3 prefix (``s3://bucket/prefix``), reached through a boto3 client.

    Spark sees the same prefix as ``s3a://`` (Hadoop's S3A connector); on EMR, where ``s3://`` is
    EMRFS, set ``spark_scheme="s3"``. Directory markers that either leaves behind are not listed.
    """

    def __init__(self, root: str, client, spark_scheme: str = "s3a") -> None:
        parsed = urlparse(root)
        if parsed.scheme not in ("s3", "s3a") or not parsed.netloc:
            raise ValueError(f"lake root: expected s3://bucket/prefix, got {root!r}")
        self.root = f"s3://{parsed.netloc}/{parsed.path.strip('/')}".rstrip("/")
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        self.client = client
        self.spark_scheme = spark_scheme

    def _key(self, relative: str) -> str:
        relative = relative.strip("/")
        return f"{self.prefix}/{relative}".strip("/") if self.prefix else relative

    def spark_uri(self, relative: str = "") -> str:
        return f"{self.spark_scheme}://{self.bucket}/{self._key(relative)}".rstrip("/")

    def _objects_under(self, key: str) -> Iterator[dict]:
        """Every object under ``key/`` (the whole bucket at the root), markers included."""
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=key + "/" if key else ""):
            yield from page.get("Contents", [])

    def list_files(self, relative: str) -> list[LakeFile]:
        files = []
        for obj in self._objects_under(self._key(relative)):
            key = obj["Key"]
            if key.endswith(_DIRECTORY_MARKER_SUFFIXES):
                continue
            rel = key[len(self.prefix) :].lstrip("/") if self.prefix else key
            files.append(
                LakeFile(
                    path=rel,
                    size=int(obj["Size"]),
                    modified_ms=int(obj["LastModified"].timestamp() * 1000),
                )
            )
        return sorted(files, key=lambda f: f.path)

    def exists(self, relative: str) -> bool:
        """A file at the path, or anything under it as a directory.

        Asked as two prefixes: one listing of ``key`` alone would see only its first key, and a
        sibling such as ``key-old/x`` sorts before ``key/x`` (``-`` and ``.`` come before ``/``).
        """
        key = self._key(relative)
        under = self.client.list_objects_v2(
            Bucket=self.bucket, Prefix=key + "/" if key else "", MaxKeys=1
        )
        if under.get("KeyCount", 0):
            return True
        # The key itself sorts first among the keys it prefixes.
        exact = self.client.list_objects_v2(Bucket=self.bucket, Prefix=key, MaxKeys=1)
        return any(obj["Key"] == key for obj in exact.get("Contents", []))

    def read_bytes(self, relative: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=self._key(relative))["Body"].read()

    def write_bytes(self, relative: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(relative), Body=data)

    def _keys_under(self, key: str) -> list[str]:
        """Every object under ``key/``, directory markers included."""
        paginator = self.client.get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=self.bucket, Prefix=key + "/" if key else "")
        return [obj["Key"] for page in pages for obj in page.get("Contents", [])]

    def delete_tree(self, relative: str) -> None:
        """The file or directory at the path, with the markers Hadoop left for it."""
        single = self._key(relative)
        keys = [obj["Key"] for obj in self._objects_under(single)]
        keys += [single, single + "_$folder$"]
        for start in range(0, len(keys), 1000):
            chunk = keys[start : start + 1000]
            self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in chunk]}
            )

    def move(self, relative: str, to: str) -> None:
        """A server-side copy, then the delete (S3 has no rename; objects up to 5 GB)."""
        target = self._key(to)
        source = {"Bucket": self.bucket, "Key": self._key(relative)}
        self.client.copy_object(Bucket=self.bucket, Key=target, CopySource=source)
        self.client.delete_object(Bucket=self.bucket, Key=source["Key"])
