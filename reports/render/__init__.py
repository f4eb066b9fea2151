"""Rendering a report: pages written as Markdown and self-contained HTML, figures, the forest plot and table cells."""
