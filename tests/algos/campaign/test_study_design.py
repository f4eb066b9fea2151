"""A spec's study design: one primary comparison per compared row, read and checked when the spec is read."""

import json

import pytest
import yaml

from algos.campaign.ablations import read_spec
from algos.config.presets import ConfigError

DESIGN = {"smallest_effect": "5 points", "secondary": "gated"}
ENTROPY = {"metric": "actor/entropy", "window": [10, 40], "direction": "up", "source": "DAPO §3.1"}
LENGTH = {**ENTROPY, "metric": "rollout/incorrect_length_mean", "direction": "down", "smallest_effect": "2 tokens"}


def spec_dir(tmp_path, rows, **fields):
    body = {
        "title": "t",
        "paper": "p",
        "paper_metric": "m",
        "kind": "leave_one_out",
        "preset": "grpo",
        "reference": "full",
        "design": DESIGN,
        "rows": [{"id": "full", "paper": 50}, *rows],
        **fields,
    }
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    return tmp_path


def test_each_compared_row_gets_one_primary():
    dapo = read_spec("dapo_table1")
    assert dapo.design.smallest_effect == pytest.approx(0.05) and dapo.design.secondary == "separate"
    assert dapo.design.sequential.looks[:3] == (4, 8, 12) and dapo.design.sequential.first_seed == 15
    assert dapo.row("naive_grpo").primary is None  # compared with no row
    primary = dapo.row("clip_higher").primary  # 38 after 36: up, on the table's metric
    assert (primary.endpoint, primary.claim, primary.direction) == (None, None, "up")
    assert primary.smallest_effect == pytest.approx(0.05)
    vapo = read_spec("vapo_table1")
    assert {row.primary.direction for row in vapo.rows if row.primary} == {"down"}
    dr_grpo = read_spec("dr_grpo_bias").row("no_length_normalisation")
    assert dr_grpo.primary.endpoint == 0 and dr_grpo.endpoints[0].metric == "rollout/incorrect_length_mean"
    assert dr_grpo.primary.smallest_effect == 2.0
    gepo = read_spec("gepo_staleness").row("gepo_stale_micro_batch").primary
    assert (gepo.claim, gepo.smallest_effect) == ("equivalent", pytest.approx(0.05))


def test_a_flagged_endpoint_or_a_claim_is_the_primary(tmp_path):
    rows = [
        {"id": "mechanism", "paper": None, "endpoints": [{**LENGTH, "primary": True}, ENTROPY]},
        {"id": "same", "paper": None, "claim": "non_inferior"},
    ]
    spec = read_spec("mine", spec_dir(tmp_path, rows, design={**DESIGN, "margin": "2 points"}))
    assert spec.row("mechanism").primary.endpoint == 0 and spec.row("mechanism").primary.direction == "down"
    assert spec.row("same").primary.claim == "non_inferior" and spec.row("same").primary.smallest_effect == 0.02


@pytest.mark.parametrize(
    ("rows", "fields", "message"),
    [
        ([{"id": "b", "paper": None}], {}, "row 'b' has no primary comparison: the paper gives no number"),
        ([{"id": "b", "paper": 50}], {}, "row 'b' has no primary comparison: the paper shows no change"),
        (
            [{"id": "b", "paper": 40, "endpoints": [{**LENGTH, "primary": True}, {**LENGTH, "primary": True}]}],
            {},
            "row 'b' declares two primary comparisons",
        ),
        (
            [{"id": "b", "paper": 40, "claim": "equivalent", "endpoints": [{**LENGTH, "primary": True}]}],
            {"design": {**DESIGN, "margin": "2 points"}},
            r"row 'b' declares two primary comparisons \(rollout/incorrect_length_mean, claim equivalent\)",
        ),
        ([{"id": "b", "paper": 40, "endpoints": [{**ENTROPY, "primary": True}]}], {}, "needs its 'smallest_effect'"),
        ([{"id": "b", "paper": 40}], {"design": {"secondary": "gated"}}, "design: missing smallest_effect"),
        ([{"id": "b", "paper": 40}], {"design": {**DESIGN, "smallest_effect": -5}}, "smallest_effect must be"),
        ([{"id": "b", "paper": 40}], {"design": {**DESIGN, "smallest_effect": 5}}, 'is a share.*"5 points"'),
        (
            [{"id": "b", "paper": 40}],
            {"design": {**DESIGN, "smallest_effect": "5 tokens"}},
            "smallest_effect must be .* with a unit: points, %",
        ),
        ([{"id": "b", "paper": None, "claim": "equivalent"}], {}, "claim 'equivalent' needs the design's 'margin'"),
        (
            [{"id": "b", "paper": None, "claim": "equivalent"}],
            {"design": {**DESIGN, "margin": "-2 points"}},
            "design: margin must be a positive number",
        ),
        ([{"id": "b", "paper": None, "claim": "better"}], {}, "claim 'better' is not one of: equivalent"),
        ([{"id": "b", "paper": 40}], {"design": {**DESIGN, "secondry": "gated"}}, "unknown key 'secondry'"),
        ([{"id": "b", "paper": 40}], {"design": {**DESIGN, "secondary": "serial"}}, "not one of: gated, separate"),
        ([{"id": "b", "paper": 40}], {"design": {**DESIGN, "basis": "nowhere.json"}}, "basis 'nowhere.json'"),
        ([{"id": "b", "paper": 40}], {"setings": {}}, "unknown key 'setings' \\(did you mean 'settings'\\?\\)"),
        ([{"id": "b", "paper": 40}], {"metric": "eval/test/acuracy_t1"}, "did you mean 'eval/test/accuracy_t1'"),
        (
            [{"id": "b", "paper": 40, "endpoints": [{**ENTROPY, "smalest_effect": 0.1}]}],
            {},
            "unknown key 'smalest_effect' \\(did you mean 'smallest_effect'\\?\\)",
        ),
    ],
)
def test_a_bad_design_fails_naming_the_file_row_and_key(tmp_path, rows, fields, message):
    with pytest.raises(ConfigError, match=message) as error:
        read_spec("mine", spec_dir(tmp_path, rows, **fields))
    assert "mine.yaml" in str(error.value)


def test_a_spec_without_a_design_may_only_describe(tmp_path):
    body = {"title": "t", "paper": "p", "paper_metric": "m", "kind": "leave_one_out", "preset": "grpo"}
    rows = [{"id": "full", "paper": None}, {"id": "b", "paper": None}]
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({**body, "reference": "full", "rows": rows}))
    assert read_spec("mine", tmp_path).design is None and read_spec("presets").design is None
    rows[1]["paper"], rows[0]["paper"] = 40, 50
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({**body, "reference": "full", "rows": rows}))
    with pytest.raises(ConfigError, match="row 'b' has a comparison to test but the spec declares no 'design'"):
        read_spec("mine", tmp_path)


SEQUENTIAL = {"looks": [4, 8, 12, 16], "spending": "pocock", "first_seed": 3}


def with_basis(tmp_path, seeds=(0, 1, 2)):
    """A design basis of the test spec (rows full and b) beside it."""
    values = {row: {"final": {str(s): 0.5 for s in seeds}} for row in ("full", "b")}
    basis = {"spec": "mine", "metric": "eval/test/accuracy_t1", "values": values, "seeds": list(seeds)}
    (tmp_path / "basis.json").write_text(json.dumps(basis))
    return {**DESIGN, "secondary": "separate", "basis": "basis.json"}


def test_a_sequential_design_is_read_with_its_looks_capped_at_the_most_seeds(tmp_path):
    design = {**with_basis(tmp_path), "sequential": {**SEQUENTIAL, "max_seeds": 10}}
    spec = read_spec("mine", spec_dir(tmp_path, [{"id": "b", "paper": 40}], design=design))
    assert spec.design.sequential.looks == (4, 8, 10) and spec.design.sequential.first_seed == 3
    plain = {**with_basis(tmp_path), "sequential": {"looks": [4, 8], "first_seed": 3}}
    assert read_spec(
        "mine", spec_dir(tmp_path, [{"id": "b", "paper": 40}], design=plain)
    ).design.sequential.spending == ("obrien_fleming")


@pytest.mark.parametrize(
    ("sequential", "extra", "message"),
    [
        ({**SEQUENTIAL, "looks": [8, 4]}, {}, r"sequential: looks must be increasing seed counts.*got \[8, 4\]"),
        ({**SEQUENTIAL, "looks": [1, 4]}, {}, "each at least 2"),
        ({**SEQUENTIAL, "max_seeds": 2}, {}, r"max_seeds 2 is below the first look \(4 seeds\)"),
        ({**SEQUENTIAL, "max_seeds": 20}, {}, r"max_seeds 20 is above the last look \(16 seeds\)"),
        ({**SEQUENTIAL, "spending": "haybittle"}, {}, "spending 'haybittle' is not one of: obrien_fleming, pocock"),
        ({**SEQUENTIAL, "look": [4]}, {}, "unknown key 'look' \\(did you mean 'looks'\\?\\)"),
        ({"looks": [4, 8]}, {}, "sequential: missing first_seed"),
        ({**SEQUENTIAL, "first_seed": 2}, {}, "first_seed 2 would test again a seed of the basis basis.json"),
        (SEQUENTIAL, {"margin": 0}, "margin must be a positive number"),
        (SEQUENTIAL, {"margin": 5}, 'is a share.*"5 points"'),
        (SEQUENTIAL, {"margin": "5 tokens"}, "margin must be .* with a unit: points, %"),
        (SEQUENTIAL, {"basis": None}, "a sequential design sizes each comparison's looks from a design basis"),
        (SEQUENTIAL, {"secondary": "gated"}, "secondary 'gated' under a sequential design.*set secondary: separate"),
    ],
)
def test_a_bad_sequential_design_fails_naming_the_file_and_key(tmp_path, sequential, extra, message):
    design = {**with_basis(tmp_path), "sequential": sequential, **extra}
    design = {key: value for key, value in design.items() if value is not None}
    with pytest.raises(ConfigError, match=message) as error:
        read_spec("mine", spec_dir(tmp_path, [{"id": "b", "paper": 40}], design=design))
    assert "mine.yaml: design" in str(error.value)
