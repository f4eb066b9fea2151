import os

import pytest


def _required_or_skipped(reason: str) -> None:
    if os.environ.get("REQUIRE_SANDBOX") == "1":
        pytest.fail(f"REQUIRE_SANDBOX=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def strong_isolation():
    """The strongest isolation here (gVisor, else bubblewrap); skips where neither runs, unless REQUIRE_SANDBOX=1
    (CI installs both)."""
    from eval.sandbox.host import detect_isolation

    isolation = detect_isolation()
    if not isolation.strong:
        _required_or_skipped(isolation.description)
    return isolation


def isolation_of(kind: str):
    """The strong isolation ``kind``; skips where it cannot run, unless REQUIRE_SANDBOX=1."""
    from eval.sandbox.host import strong_isolation

    isolation = strong_isolation(kind)
    if isinstance(isolation, str):
        _required_or_skipped(isolation)
    return isolation


@pytest.fixture(scope="session")
def bubblewrap_isolation():
    return isolation_of("bubblewrap")


@pytest.fixture(scope="session")
def gvisor_isolation():
    return isolation_of("gvisor")


@pytest.fixture(scope="session", params=["gvisor", "bubblewrap"])
def each_strong_isolation(request):
    """Each strong isolation in turn, for what both must hold."""
    return isolation_of(request.param)
