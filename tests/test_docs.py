"""The Markdown a user reads holds together: relative links reach their files and headings,
tables have as many cells in every row as in their header, and nothing points outside the
repository (a document the user does not have, an issue number).

GitHub's rendering is the reference: heading anchors are GitHub's slugs, and a pipe splits a
table cell unless it is escaped (even inside a code span).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def markdown_pages(repo: Path = REPO) -> list[Path]:
    """The pages users read: the top-level ones, docs/, and the packages' READMEs."""
    pages = [*repo.glob("*.md"), *repo.glob("docs/**/*.md"), *repo.glob("profile_store/**/*.md")]
    return sorted(set(pages))


@dataclass(frozen=True)
class Defect:
    page: Path
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{os.path.relpath(self.page, REPO)}:{self.line}: {self.problem}"


FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            yield number, line


def without_code_spans(line: str) -> str:
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


# ---- anchors -------------------------------------------------------------------------------

ATX_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
SETEXT_UNDERLINE = re.compile(r"^\s{0,3}(=+|-+)\s*$")
HTML_ID = re.compile(r"""<[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']""")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text, lower case, punctuation dropped, spaces as
    hyphens (letters, digits, ``_`` and ``-`` stay)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page defines: its headings' slugs (repeats numbered as GitHub does) and
    explicit ``id``/``name`` attributes."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    previous = ""
    for _, line in prose_lines(text):
        heading = None
        atx = ATX_HEADING.match(line)
        if atx:
            heading = atx.group(1)
        elif SETEXT_UNDERLINE.match(line) and previous.strip() and "|" not in previous:
            heading = previous.strip()
        if heading is not None:
            slug = github_slug(heading)
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
        found.update(HTML_ID.findall(line))
        previous = line
    return found


# ---- links ---------------------------------------------------------------------------------

INLINE_LINK = re.compile(r"\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_LINK = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto: ...


def links(text: str) -> Iterator[tuple[int, str]]:
    """(line number, target) of every link and image in the prose, code left out."""
    for number, line in prose_lines(text):
        prose = without_code_spans(line)
        for pattern in (INLINE_LINK, REFERENCE_DEFINITION, HTML_LINK):
            for target in pattern.findall(prose):
                yield number, target.strip("<>")


def link_defects(page: Path) -> list[Defect]:
    """Relative links to files that do not exist, and anchors their page does not define."""
    defects = []
    for number, target in links(page.read_text(encoding="utf-8")):
        if EXTERNAL.match(target):
            continue
        path_part, _, fragment = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            defects.append(Defect(page, number, f"link to a missing file: {target}"))
        elif (
            fragment
            and linked.suffix == ".md"
            and fragment not in anchors(linked.read_text(encoding="utf-8"))
        ):
            defects.append(Defect(page, number, f"no heading for the anchor: {target}"))
    return defects


# ---- tables --------------------------------------------------------------------------------

DELIMITER_CELL = re.compile(r"^\s*:?-+:?\s*$")


def cells(row: str) -> list[str]:
    """A table row's cells, as GitHub splits them: on every pipe not escaped with ``\\``."""
    inner = row.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return re.split(r"(?<!\\)\|", inner)


def is_delimiter_row(line: str) -> bool:
    return "|" in line and all(DELIMITER_CELL.match(cell) for cell in cells(line))


def table_defects(page: Path) -> list[Defect]:
    """Table rows (the delimiter row included) whose cell count differs from the header's."""
    defects = []
    lines = list(prose_lines(page.read_text(encoding="utf-8")))
    index = 0
    while index + 1 < len(lines):
        (header_number, header), (_, delimiter) = lines[index], lines[index + 1]
        if "|" not in header or not is_delimiter_row(delimiter):
            index += 1
            continue
        width = len(cells(header))
        index += 1
        while index < len(lines) and lines[index][1].strip():
            number, row = lines[index]
            if len(cells(row)) != width:
                defects.append(
                    Defect(
                        page,
                        number,
                        f"{len(cells(row))} cells in a table whose header "
                        f"(line {header_number}) has {width}",
                    )
                )
            index += 1
    return defects


# ---- references to documents the user does not have ------------------------------------------

OUTSIDE_REFERENCES = {
    "a document outside the repository": re.compile(r"\.\./shared/|\bDESIGN\.md\b"),
    "a design-document seed": re.compile(r"\bseeds? \d{3}\b", re.IGNORECASE),
    "an issue number": re.compile(r"\bissues? #?\d+\b|(?<![\w&/])#\d{1,5}\b(?![\w-])", re.I),
}
SOURCE_ROOTS = ("docs", "profile_store", "profile_assets", "resources", "sensors", "bench")
SOURCE_ROOTS += ("examples", "tests", ".ci")
SOURCE_SUFFIXES = {".md", ".py", ".yaml", ".yml", ".toml", ".json", ".js", ".html", ".txt", ""}


def product_files(repo: Path = REPO) -> list[Path]:
    """The repository's own text: pages, code (comments and docstrings too) and settings."""
    found = [path for path in repo.iterdir() if path.is_file()]
    for root in SOURCE_ROOTS:
        found.extend(path for path in (repo / root).rglob("*") if path.is_file())
    return sorted(
        path
        for path in found
        if path.suffix in SOURCE_SUFFIXES
        and "__pycache__" not in path.parts
        and path.resolve() != Path(__file__).resolve()
    )


def outside_references(path: Path) -> list[Defect]:
    """References a user cannot follow; a comment or docstring wrapped over lines counts."""
    text = path.read_text(encoding="utf-8", errors="replace")
    # One line per paragraph of prose: "seed" at the end of a line and "000" on the next.
    joined = re.sub(r"\n[ \t]*(?:#+[ \t]*)?", lambda m: " " * len(m.group(0)), text)
    defects = []
    for problem, pattern in OUTSIDE_REFERENCES.items():
        if problem == "an issue number" and path.suffix in {".js", ".html", ".json"}:
            continue  # colours (#123456) and fragments, not prose
        for match in pattern.finditer(joined):
            line = text.count("\n", 0, match.start()) + 1
            defects.append(Defect(path, line, f"{problem}: {match.group(0)!r}"))
    return defects


# ---- the repository's pages ------------------------------------------------------------------

PAGES = markdown_pages()


def page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


def test_the_checked_pages_include_the_readme_the_changelog_and_the_docs():
    names = {page_id(page) for page in PAGES}
    assert {"README.md", "CHANGELOG.md", "profile_store/hbase_gateway/README.md"} <= names
    assert any(name.startswith("docs/") for name in names)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_relative_links_reach_existing_files_and_headings(page):
    defects = link_defects(page)
    assert not defects, "\n".join(map(str, defects))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_table_row_has_as_many_cells_as_its_header(page):
    defects = table_defects(page)
    assert not defects, "\n".join(map(str, defects))


def test_nothing_refers_to_documents_or_issues_outside_the_repository():
    defects = [defect for path in product_files() for defect in outside_references(path)]
    assert not defects, "\n".join(map(str, defects))


# ---- the checks themselves -----------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_link_to_a_missing_file_is_a_defect(tmp_path):
    write(tmp_path, "docs/there.md", "# There\n")
    page = write(tmp_path, "README.md", "See [there](docs/there.md) and [gone](docs/gone.md).\n")
    assert [d.problem for d in link_defects(page)] == ["link to a missing file: docs/gone.md"]


def test_an_anchor_without_its_heading_is_a_defect(tmp_path):
    write(tmp_path, "docs/api.md", "# API\n\n## Errors and limits\n")
    page = write(
        tmp_path,
        "README.md",
        "[ok](docs/api.md#errors-and-limits), [bad](docs/api.md#errors), [top](#intro)\n"
        "\n# Intro\n",
    )
    assert [d.problem for d in link_defects(page)] == [
        "no heading for the anchor: docs/api.md#errors"
    ]


def test_links_inside_code_are_not_links(tmp_path):
    page = write(
        tmp_path,
        "README.md",
        "Write `[x](missing.md)` like this:\n\n```markdown\n[y](also-missing.md)\n```\n",
    )
    assert link_defects(page) == []


def test_external_links_are_left_to_their_sites(tmp_path):
    page = write(tmp_path, "README.md", "[Dagster](https://dagster.io) <mailto:a@b.c>\n")
    assert link_defects(page) == []


def test_heading_anchors_are_githubs_slugs():
    text = (
        "# adtech-profiles\n## Your own data: `profiles import`\n## Walkthrough (CDNOW)\n"
        "## Faults\n## Faults\nSetext heading\n---\n"
    )
    assert anchors(text) == {
        "adtech-profiles",
        "your-own-data-profiles-import",
        "walkthrough-cdnow",
        "faults",
        "faults-1",
        "setext-heading",
    }


def test_a_row_with_more_cells_than_its_header_is_a_defect(tmp_path):
    page = write(
        tmp_path,
        "README.md",
        "| step | s |\n| --- | ---: |\n| ingest | 1.0 |\n| sketches | 2.0 | 9.9 |\n",
    )
    assert [(d.line, d.problem) for d in table_defects(page)] == [
        (4, "3 cells in a table whose header (line 1) has 2")
    ]


def test_a_row_with_fewer_cells_than_its_header_is_a_defect(tmp_path):
    page = write(tmp_path, "README.md", "a | b | c\n--- | --- | ---\n1 | 2\n")
    assert [d.line for d in table_defects(page)] == [3]


def test_an_escaped_pipe_does_not_split_a_cell(tmp_path):
    page = write(
        tmp_path,
        "README.md",
        "| key | takes |\n| --- | --- |\n| `source` | `{format: csv \\| parquet}` |\n",
    )
    assert table_defects(page) == []


def test_tables_inside_code_blocks_are_not_checked(tmp_path):
    page = write(tmp_path, "README.md", "```\n| a | b |\n| --- | --- |\n| 1 | 2 | 3 |\n```\n")
    assert table_defects(page) == []


def test_a_reference_to_a_design_seed_or_an_issue_is_a_defect(tmp_path):
    path = write(
        tmp_path,
        "notes.py",
        '"""Compaction (seed\n000): as in ../shared/DESIGN.md, see issue 4."""\n'
        "COLOUR = 1  # not #1d232b, but #12 is an issue\n",
    )
    assert sorted(d.problem for d in outside_references(path)) == [
        "a design-document seed: 'seed 000'",
        "a document outside the repository: '../shared/'",
        "a document outside the repository: 'DESIGN.md'",
        "an issue number: '#12'",
        "an issue number: 'issue 4'",
    ]


def test_a_random_seed_is_not_a_design_seed(tmp_path):
    path = write(tmp_path, "bench.py", "# seed 7; DataSketches' seed 9001\nSEED = 7\n")
    assert outside_references(path) == []
