#!/usr/bin/env bash
# The whole suite, as CI runs it: every test, the slow end-to-end ones included, two at a time (pytest-xdist), then
# the tests that watch the whole machine (marked serial) alone. Arguments go to both pytest runs.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
python -m pytest -m "not serial" -n 2 "$@" || status=$?
python -m pytest -m "serial" "$@" || status=$?
exit $status
