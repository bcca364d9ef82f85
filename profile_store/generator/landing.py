"""Landing files: the event table as gzip JSON lines, a few parts per day, ``_SUCCESS`` last.

Lines are assembled from per-field JSON fragments with pyarrow string kernels; because every
line ends in a newline, a slice of the line array's data buffer *is* the file content, so
no per-line Python runs between the table and gzip.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profile_store.generator.arrow_strings import quoted
from profile_store.generator.timestamps import iso_millis

STREAM_DUPLICATES = 30
EVENTS_PER_PART = 100_000
GZIP_LEVEL = 2
DUPLICATE_SHARE = 0.002  # SDK retries: exact copies of a line
DUPLICATE_LATE_SHARE = 0.35  # retries that land in a later batch, often another part file
DUPLICATE_NEAR_ROWS = 200
SUCCESS_MARKER = "_SUCCESS"

FIELDS = (
    "event_id",
    "app_id",
    "user_id",
    "id_type",
    "event_time",
    "event_type",
    "event_attributes",
    "member_id",
    "alt_ids",
    "ip",
    "user_agent",
)


def day_directory(landing_dir: Path, date_text: str) -> Path:
    return landing_dir / f"date={date_text}"


def json_fragments(events: pa.Table) -> dict[str, pa.Array]:
    """``"field":value`` per row and field, in FIELDS order; a null fragment omits the key."""

    def string_field(name: str, values: pa.Array) -> pa.Array:
        if pa.types.is_dictionary(values.type):
            values = values.cast(pa.string())
        return pc.binary_join_element_wise(f'"{name}":', quoted(values), "")

    event_ms = pc.cast(events["event_time"], pa.int64()).to_numpy()
    member = pc.fill_null(quoted(events["member_id"].combine_chunks()), "null")
    email = pc.binary_join_element_wise('{"email_sha256":"', events["email_sha256"], '"}', "")
    fragments = {
        "event_id": string_field("event_id", events["event_id"]),
        "app_id": string_field("app_id", events["app_id"]),
        "user_id": string_field("user_id", events["user_id"]),
        "id_type": string_field("id_type", events["id_type"]),
        "event_time": string_field("event_time", iso_millis(event_ms)),
        "event_type": string_field("event_type", events["event_type"]),
        "event_attributes": pc.binary_join_element_wise(
            '"event_attributes":', events["event_attributes"], ""
        ),
        "member_id": pc.binary_join_element_wise('"member_id":', member, ""),
        "alt_ids": pc.binary_join_element_wise('"alt_ids":', pc.fill_null(email, "{}"), ""),
        "ip": string_field("ip", events["ip"]),
        "user_agent": string_field("user_agent", events["user_agent"]),
    }
    return {name: _single_chunk(fragments[name]) for name in FIELDS}


def assemble_lines(fragments: dict[str, pa.Array]) -> pa.StringArray:
    """One JSON object per row, newline-terminated. ``event_id`` is never null, which keeps
    pyarrow's skip-nulls join from dropping rows (see ``arrow_strings.json_object``)."""
    body = pc.binary_join_element_wise(
        *(fragments[name] for name in FIELDS), ",", null_handling="skip"
    )
    return pc.binary_join_element_wise("{", body, "}\n", "")


@dataclass(frozen=True)
class Duplicates:
    """Exact copies of some lines, and where each line of the day's files comes from."""

    source: np.ndarray  # the original row each copy repeats
    order: np.ndarray  # per output line: an original row (< rows) or rows + copy number

    @property
    def count(self) -> int:
        return len(self.source)


def plan_duplicates(eligible: np.ndarray, rng: np.random.Generator) -> Duplicates:
    """Copies of ``DUPLICATE_SHARE`` of the eligible rows, and where they land.

    Most copies follow their original closely (an immediate retry); some land anywhere in
    the day, i.e. usually in another part file (a retry from a later batch).
    """
    rows = len(eligible)
    candidates = np.flatnonzero(eligible)
    count = min(len(candidates), round(DUPLICATE_SHARE * rows))
    if count == 0:
        return Duplicates(np.empty(0, dtype=np.int64), np.arange(rows, dtype=np.int64))
    source = np.sort(rng.choice(candidates, size=count, replace=False))
    late = rng.random(count) < DUPLICATE_LATE_SHARE
    position = np.where(
        late,
        rng.uniform(0, rows, count),
        source + rng.uniform(0.5, DUPLICATE_NEAR_ROWS, count),
    )
    keys = np.concatenate([np.arange(rows, dtype=np.float64), position])
    return Duplicates(source, np.argsort(keys, kind="stable"))


def write_day(
    day_dir: Path,
    line_count: int,
    lines_between: Callable[[int, int], pa.StringArray],
    events_per_part: int,
) -> int:
    """Replace the day's parts, then write the empty ``_SUCCESS`` marker last.

    ``lines_between(start, stop)`` builds the newline-terminated lines of a part, so only the
    parts being compressed are in memory. The marker is removed first and each part is
    renamed into place, so a reader that sees ``_SUCCESS`` always sees complete files of this
    run and none from an earlier one.
    """
    day_dir.mkdir(parents=True, exist_ok=True)
    (day_dir / SUCCESS_MARKER).unlink(missing_ok=True)
    for stale in day_dir.glob("part-*"):
        stale.unlink()
    parts = max(1, round(line_count / events_per_part))
    bounds = np.linspace(0, line_count, parts + 1).astype(np.int64)

    def compressed(index: int) -> bytes:
        lines = lines_between(int(bounds[index]), int(bounds[index + 1]))
        return gzip.compress(_line_bytes(lines, 0, len(lines)), GZIP_LEVEL, mtime=0)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for index, data in enumerate(pool.map(compressed, range(parts))):
            path = day_dir / f"part-{index:05d}.jsonl.gz"
            temporary = path.with_name(path.name + ".tmp")
            temporary.write_bytes(data)
            os.replace(temporary, path)
    (day_dir / SUCCESS_MARKER).write_bytes(b"")
    return parts


def _single_chunk(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _line_bytes(lines: pa.StringArray, start: int, stop: int) -> memoryview:
    """The concatenated text of ``lines[start:stop]``: a view of the data buffer, no copy."""
    offsets = np.frombuffer(
        lines.buffers()[1], dtype=np.int32, count=len(lines) + 1, offset=lines.offset * 4
    )
    data = lines.buffers()[2]
    return memoryview(data)[offsets[start] : offsets[stop]]
