"""One report page written twice: Markdown (figures as PNG files beside it) and self-contained HTML.

A page is a title, an introduction, warnings, an optional leading figure, a main table with a note
under it, further titled tables, figures and a provenance record; the ablation, benchmark and sweep reports all render
through here.
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.render.figures import png_data_uri

STYLE = (
    "body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:4px 8px}pre{background:#f6f6f6;padding:1em;overflow:auto}"
)


@dataclass(frozen=True)
class Table:
    """A titled table below the main one, with a note under it."""

    title: str
    header: Sequence[str]
    cells: Sequence[Sequence[str]]
    note: str = ""


@dataclass(frozen=True)
class Page:
    """Everything one report shows; ``figures`` are (title, PNG bytes); ``warnings`` come first, in bold;
    ``first`` are tables shown before everything else (a report's design); ``lead`` is a figure shown before
    the main table, the page's summary at a glance."""

    title: str
    introduction: str
    header: Sequence[str]
    cells: Sequence[Sequence[str]]
    note: str
    figures: Sequence[tuple[str, bytes]]
    origin: dict[str, Any]
    tables: Sequence[Table] = ()
    warnings: Sequence[str] = ()
    lead: tuple[str, bytes] | None = None
    first: Sequence[Table] = ()

    @property
    def all_figures(self) -> list[tuple[str, bytes]]:
        """The leading figure (if any), then the others: the order their files are written in."""
        return [*([self.lead] if self.lead else []), *self.figures]


def _markdown_table(header: Sequence[str], cells: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in cells]


def _html_table(header: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(title)}</th>" for title in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in cells)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_markdown(page: Page, figure_paths: Sequence[str]) -> str:
    """The page as Markdown; ``figure_paths`` are the figures' image paths relative to the page."""
    figures = [(title, path) for (title, _), path in zip(page.all_figures, figure_paths, strict=True)]
    lead = figures.pop(0) if page.lead else None
    lines = [f"# {page.title}", "", page.introduction, ""]
    lines += [f"**Warning:** {warning}" for warning in page.warnings] + ([""] if page.warnings else [])
    for table in page.first:
        lines += [f"## {table.title}", "", *_markdown_table(table.header, table.cells), "", table.note, ""]
    if lead:
        lines += [f"![{lead[0]}]({lead[1]})", ""]
    lines += [*_markdown_table(page.header, page.cells), "", page.note, ""]
    for table in page.tables:
        lines += [f"## {table.title}", "", *_markdown_table(table.header, table.cells), "", table.note, ""]
    for title, path in figures:
        lines += [f"## {title}", "", f"![{title}]({path})", ""]
    lines += ["## Provenance", "", "```json", json.dumps(page.origin, indent=2), "```", ""]
    return "\n".join(lines)


def render_html(page: Page) -> str:
    """The page as one self-contained HTML document (figures embedded as data URIs)."""
    esc = html.escape
    warnings = "".join(f"<p><strong>Warning:</strong> {esc(warning)}</p>" for warning in page.warnings)
    tables, first = (
        "".join(f"<h2>{esc(t.title)}</h2>{_html_table(t.header, t.cells)}<p>{esc(t.note)}</p>" for t in group)
        for group in (page.tables, page.first)
    )
    images = "".join(
        f"<h2>{esc(title)}</h2><img alt='{esc(title)}' src='{png_data_uri(png)}'>" for title, png in page.figures
    )
    lead = f"<img alt='{esc(page.lead[0])}' src='{png_data_uri(page.lead[1])}'>" if page.lead else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(page.title)}</title><style>{STYLE}</style>"
        f"</head><body><h1>{esc(page.title)}</h1><p>{esc(page.introduction)}</p>{warnings}{first}{lead}"
        f"{_html_table(page.header, page.cells)}<p>{esc(page.note)}</p>{tables}{images}"
        f"<h2>Provenance</h2><pre>{esc(json.dumps(page.origin, indent=2))}</pre>"
        "</body></html>\n"
    )


def write_page(page: Page, out_dir: Path, name: str) -> tuple[Path, Path]:
    """Write ``name.md`` (figures in ``name_figures/``) and ``name.html`` into ``out_dir``, each atomically."""
    figure_dir = out_dir / f"{name}_figures"
    figure_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, (_, png) in enumerate(page.all_figures):
        path = figure_dir / f"{index:02d}.png"
        path.write_bytes(png)
        paths.append(f"{figure_dir.name}/{path.name}")
    markdown, document = out_dir / f"{name}.md", out_dir / f"{name}.html"
    for path, text in ((markdown, render_markdown(page, paths)), (document, render_html(page))):
        partial = path.with_name(path.name + ".partial")
        partial.write_text(text)
        partial.replace(path)
    return markdown, document


def run_report(write: Callable[[], Iterable[Path]], errors: tuple[type[Exception], ...]) -> int:
    """A report command's body: print each path ``write`` writes, or one ``error:`` line for ``errors`` (status 2)."""
    try:
        for path in write():
            print(path)
    except errors as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
