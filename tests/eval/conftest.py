import os

import pytest


@pytest.fixture(scope="session")
def strong_isolation():
    """Bubblewrap isolation; skips where bubblewrap cannot run, unless REQUIRE_SANDBOX=1 (CI installs it)."""
    from eval.sandbox.host import detect_isolation

    isolation = detect_isolation()
    if not isolation.strong:
        if os.environ.get("REQUIRE_SANDBOX") == "1":
            pytest.fail(f"REQUIRE_SANDBOX=1 but {isolation.description}")
        pytest.skip(isolation.description)
    return isolation
