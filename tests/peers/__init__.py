"""Parity tests against independent implementations (TRL, verl)."""

import importlib
import os

import pytest


def import_peer(module: str):
    """Import a peer implementation; skip when it is not installed, unless REQUIRE_PEERS=1 (CI)."""
    if os.environ.get("REQUIRE_PEERS") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module)
