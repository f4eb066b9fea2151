"""Aggregation of finished runs into tables, statistics and figures."""
