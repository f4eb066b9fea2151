"""The draws' speed measurement: both kinds of draws timed on the same problems, a record written."""

import json

from algos.campaign.draw_speed import main


def test_both_kinds_of_draws_are_timed_on_the_rows_batches(tiny_base, tmp_path, capsys):
    out = tmp_path / "speed.json"
    assert (
        main(
            [
                "--spec",
                "dapo_table1",
                "--row",
                "naive_grpo",
                "--model",
                str(tiny_base),
                "--repeats",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert record["batch"] == "16 x 8" and record["repeats"] == 2
    assert record["stream"]["median s"] > 0 and record["keyed"]["median s"] > 0 and record["stream"]["tokens"] > 0
    assert record["ratio"] == record["keyed"]["median s"] / record["stream"]["median s"]
    assert "keyed/stream" in capsys.readouterr().out
