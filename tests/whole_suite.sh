#!/usr/bin/env bash
# The whole suite, as CI runs it: every test, the slow end-to-end ones included, two at a time (pytest-xdist), then
# the tests that watch the whole machine (marked serial) alone. Arguments go to both pytest runs.
# Two at a time: one thread each (two workers of two threads on two cores train 3-5 times slower than of one); the
# tests of one xdist_group share a worker (the cluster's tests start and stop the same services); the largest group
# and the slow tests start first (tests/conftest.py), so no long test is left to run alone at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
OMP_NUM_THREADS=1 python -m pytest -m "not serial" -n 2 --dist loadgroup "$@" || status=$?
python -m pytest -m "serial" "$@" || status=$?
exit $status
