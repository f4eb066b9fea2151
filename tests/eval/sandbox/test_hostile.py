"""The hostile set (tests/eval/sandbox/hostile.py): every completion fails, and none of them leaves a trace."""

import os
import time

from tests.eval.sandbox.hostile import (
    ATTACKS,
    GRACE_S,
    LIMITS,
    bait,
    describe,
    living_processes,
    project_fingerprint,
    run_attacks,
)

FORGERIES = [name for name, (category, _) in ATTACKS.items() if category == "forgery"]


def test_every_hostile_completion_fails_and_leaves_nothing_behind(strong_isolation, tmp_path):
    assert len(ATTACKS) >= 40
    before, fingerprint = living_processes(), project_fingerprint()
    with bait(tmp_path) as target:
        outcomes = run_attacks(target, isolation=strong_isolation)
        time.sleep(4)  # past the daemons' delayed writes
        assert target.arrivals() == []
        assert target.canary_intact()
    assert [(o.name, o.result.status) for o in outcomes if o.result.passed] == []
    assert [o.name for o in outcomes if o.leaked_secret] == []
    assert [o.name for o in outcomes if o.seconds > LIMITS.timeout_s + GRACE_S] == []
    assert project_fingerprint() == fingerprint
    assert describe(living_processes() - before - {os.getpid()}) == []


def test_forged_verdicts_fail_in_the_fallback_sandbox_too(tmp_path):
    """The verdict is decided in the grader whatever the isolation."""
    from eval.sandbox.host import Isolation

    fallback = Isolation("process", "fallback process sandbox (forced by the tests)")
    with bait(tmp_path) as target:
        outcomes = run_attacks(target, FORGERIES, isolation=fallback)
    assert [o.name for o in outcomes if o.result.passed] == []
