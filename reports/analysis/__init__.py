"""The analysis of finished runs: each run's files loaded once, rows and endpoints measured, compared and judged."""
