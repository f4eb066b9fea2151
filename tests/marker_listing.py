"""A pytest plugin (``-p tests.marker_listing``) writing every collected test's id and marker names as JSON to the
file ``$MARKER_LISTING`` names, so one collection answers what any ``-m`` selection of it would run."""

import json
import os


def pytest_collection_finish(session):
    listing = {item.nodeid: sorted({marker.name for marker in item.iter_markers()}) for item in session.items}
    with open(os.environ["MARKER_LISTING"], "w") as out:
        json.dump(listing, out)
