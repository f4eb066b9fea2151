"""Seed aggregation against hand values, and figures drawn from hand-written run histories."""

import base64
import struct

import matplotlib.pyplot as plt
import numpy as np
import pytest

from reports.render.figures import (
    CURVES,
    figure_grid,
    panels_figure,
    png_bytes,
    png_data_uri,
    row_curves,
    seed_curve,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
STEPS = 4


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from the IHDR chunk, which always follows the signature."""
    return struct.unpack(">II", png[16:24])


def history(seed: int, shift: float) -> list[dict]:
    """A metrics.jsonl's lines like a trainer's: evaluation at steps 0, 2 and 4, training metrics at steps 1-4.

    It logs every metric of CURVES except "actor/clip_frac_high", so that key is missing everywhere.
    """
    lines = [{"step": 0, "eval/test/accuracy_t1": 0.1 + shift, "eval/test/accuracy_greedy": 0.2 + shift}]
    for step in range(1, STEPS + 1):
        line = {
            "step": step,
            "rollout/accuracy": 0.1 * step + shift,
            "rollout/reward_mean": 0.1 * step + shift + seed,
            "actor/entropy": 1.0 - 0.1 * step,
            "rollout/response_length_mean": 100.0 + step,
            "rollout/truncated_frac": 0.05,
            "actor/clip_frac_low": 0.01 * seed,
        }
        if step % 2 == 0:
            line["eval/test/accuracy_t1"] = 0.1 + 0.1 * step + shift
        lines.append(line)
    return lines


@pytest.fixture
def runs_by_row():
    """Two rows with three seeds each, then a row with a single seed: row -> its seeds' histories."""
    rows = {"baseline": (3, 0.0), "clip_higher": (3, 0.1), "single_seed": (1, 0.2)}
    return {row: [history(seed, shift) for seed in range(seeds)] for row, (seeds, shift) in rows.items()}


def row_panels(histories_by_row, key, title, compared=None) -> bytes:
    """The PNG of one metric's panels, as a report draws it."""
    return png_bytes(panels_figure(row_curves(histories_by_row, key), title, compared or {}))


def test_seed_curve_averages_only_the_steps_every_seed_logged():
    histories = [
        [{"step": 0, "m": 1.0}, {"step": 1, "m": 2.0}, {"step": 2, "m": 3.0}],
        [{"step": 0, "m": 3.0}, {"step": 1, "other": 9.0}, {"step": 2, "m": 5.0}],  # no "m" at step 1
        [{"step": 0, "m": 5.0}, {"step": 1, "m": 4.0}, {"step": 2, "m": 10.0}, {"step": 3, "m": 1.0}],
    ]
    curve = seed_curve(histories, "m")
    np.testing.assert_array_equal(curve.steps, [0, 2])
    np.testing.assert_allclose(curve.mean, [3.0, 6.0])
    np.testing.assert_array_equal(curve.low, [1.0, 3.0])
    np.testing.assert_array_equal(curve.high, [5.0, 10.0])
    assert curve.n_seeds == 3


def test_seed_curve_of_one_seed_is_that_seed():
    curve = seed_curve([[{"step": 3, "m": 0.5}, {"step": 1, "m": 0.25}, {"step": 2, "m": None}]], "m")
    np.testing.assert_array_equal(curve.steps, [1, 3])
    np.testing.assert_array_equal(curve.mean, [0.25, 0.5])
    np.testing.assert_array_equal(curve.low, curve.mean)
    np.testing.assert_array_equal(curve.high, curve.mean)
    assert curve.n_seeds == 1


def test_seed_curve_is_none_without_a_shared_step():
    assert seed_curve([], "m") is None
    assert seed_curve([[{"step": 0, "other": 1.0}]], "m") is None
    assert seed_curve([[{"step": 0, "m": 1.0}], [{"step": 1, "m": 1.0}]], "m") is None


def test_row_curves_keep_row_order_and_drop_rows_without_data():
    histories = {
        "b": [[{"step": 0, "m": 1.0}]],
        "no_data": [[{"step": 0, "other": 1.0}]],
        "a": [[{"step": 0, "m": 2.0}], [{"step": 0, "m": 4.0}]],
    }
    curves = row_curves(histories, "m")
    assert list(curves) == ["b", "a"]
    np.testing.assert_array_equal(curves["a"].mean, [3.0])


COMPARED = {"clip_higher": "baseline", "single_seed": "baseline"}
THREE_PANELS = (720, 240)  # 3 columns x 2.4 in, 1 line x 1.8 in + 0.6 in of legend, at 100 dpi


def test_panels_are_a_png_whose_size_follows_the_panel_count_and_deterministic(runs_by_row):
    png = row_panels(runs_by_row, "eval/test/accuracy_t1", "held-out accuracy", COMPARED)
    assert png.startswith(PNG_SIGNATURE)
    assert png_size(png) == THREE_PANELS
    assert row_panels(runs_by_row, "eval/test/accuracy_t1", "held-out accuracy", COMPARED) == png
    two = row_panels({"baseline": runs_by_row["baseline"]}, "eval/test/accuracy_t1", "held-out accuracy")
    assert png_size(two) == (240, 240)
    six = row_panels({f"{row}{copy}": runs for row, runs in runs_by_row.items() for copy in "ab"}, "actor/entropy", "e")
    assert png_size(six) == (960, 420)  # 4 columns, 2 lines


def test_a_compared_row_is_drawn_in_its_panel(runs_by_row):
    alone = row_panels(runs_by_row, "rollout/reward_mean", "reward")
    assert row_panels(runs_by_row, "rollout/reward_mean", "reward", COMPARED) != alone


def test_every_row_has_its_own_panel_and_the_legend_covers_none(runs_by_row, tmp_path):
    curves = row_curves(runs_by_row, "actor/entropy")
    figure = panels_figure(curves, "entropy", COMPARED)
    figure.draw_without_rendering()  # applies the constrained layout, as saving does
    panels = [axes for axes in figure.axes if axes.get_visible()]
    assert [axes.get_title().split(" (n=")[0] for axes in panels] == list(runs_by_row)
    assert [axes.get_title().endswith("vs baseline") for axes in panels] == [False, True, True]
    (legend,) = figure.legends
    box = legend.get_window_extent()
    assert not any(box.overlaps(axes.get_window_extent()) for axes in panels)
    assert all(box.y1 <= axes.get_window_extent().y0 for axes in panels)  # below the data


def test_figure_grid_follows_curves_order_and_skips_missing_keys(runs_by_row):
    figures = figure_grid(runs_by_row, COMPARED)
    present = [title for key, title in CURVES.items() if key != "actor/clip_frac_high"]
    assert [title for title, _ in figures] == present
    assert all(png.startswith(PNG_SIGNATURE) and png_size(png) == THREE_PANELS for _, png in figures)


def test_figure_grid_of_runs_without_metrics_is_empty():
    assert figure_grid({"never_ran": [[]]}) == []


def test_no_figure_stays_open(runs_by_row):
    plt.close("all")
    figure_grid(runs_by_row)
    row_panels(runs_by_row, "actor/entropy", "entropy")
    assert plt.get_fignums() == []


def test_data_uri_round_trips():
    png = PNG_SIGNATURE + b"rest"
    uri = png_data_uri(png)
    assert uri.startswith("data:image/png;base64,")
    assert base64.b64decode(uri.removeprefix("data:image/png;base64,")) == png
