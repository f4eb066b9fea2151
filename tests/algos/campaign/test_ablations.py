import dataclasses
import shutil

import pytest
import yaml

from algos.campaign.ablations import (
    ABLATIONS_DIR,
    Budget,
    available_specs,
    campaign_budget,
    main,
    read_spec,
    scale_steps,
)
from algos.config.presets import PROJECT_ROOT, ConfigError, diff_from_base, load_config


def test_shipped_specs_read_with_the_papers_rows_and_numbers():
    assert available_specs() == [
        "dapo_table1", "dapo_table1_2p5", "dr_grpo_bias", "gepo_staleness", "presets", "vapo_table1",
    ]  # fmt: skip
    assert [r.preset for r in read_spec("presets").rows] == [
        "ppo", "grpo", "dr_grpo", "dapo", "vapo", "gspo", "gepo", "rloo", "reinforce_pp",
        "cispo", "sapo", "gmpo", "gpg", "remax", "opo", "lite_ppo",
    ]  # fmt: skip
    dapo = read_spec("dapo_table1")
    assert dapo.kind == "cumulative" and [r.paper for r in dapo.rows] == [30, 36, 38, 41, 42, 50]
    vapo = read_spec("vapo_table1")
    assert [r.paper for r in vapo.rows] == [5, 50, 11, 33, 45, 46, 53, 54, 55, 60]
    assert all(r.paper is None for r in read_spec("dr_grpo_bias").rows)


def test_cumulative_rows_add_up_and_compare_with_the_row_before():
    spec = read_spec("dapo_table1")
    assert [r.compare_to for r in spec.rows] == [None] + [r.id for r in spec.rows[:-1]]
    naive, clip, full = spec.config("naive_grpo"), spec.config("clip_higher"), spec.config("dynamic_sampling")
    assert naive == load_config("grpo", overrides=["kl.coef=0", "reward.incorrect=-1"])
    assert clip.reward.overlong_filter and clip.policy_loss.clip_eps_high == 0.28
    assert clip.reward.soft_overlong_buffer is None and clip.policy_loss.aggregation == "seq_mean_token_mean"
    assert full.dynamic_sampling.enabled and full.policy_loss.aggregation == "token_mean"


def test_leave_one_out_rows_change_one_thing_from_the_reference():
    spec = read_spec("vapo_table1")
    assert {r.compare_to for r in spec.rows if r.id != "vapo"} == {"vapo"} and spec.row("vapo").compare_to is None
    full = diff_from_base(spec.config("vapo"))
    without = diff_from_base(spec.config("no_clip_higher"))
    assert {k for k in full.keys() | without.keys() if full.get(k) != without.get(k)} == {"policy_loss.clip_eps_high"}
    assert spec.config("vanilla_ppo") == load_config("ppo", overrides=["critic.init=reward_model"])
    assert spec.config("dapo") == load_config("dapo")
    assert spec.config("vapo").advantage.adaptive_lambda_alpha == 0.5  # the spec's settings: its own preset only
    assert spec.config("no_length_adaptive_gae").advantage.adaptive_lambda_alpha is None
    gepo = read_spec("gepo_staleness")
    assert gepo.row("grpo_online").compare_to == "gepo_online" and gepo.row("grpo_stale").compare_to == "gepo_stale"
    assert gepo.config("gspo_stale").rollout.policy_staleness == 4


def write_spec(tmp_path, **fields):
    body = {
        "title": "t",
        "paper": "p",
        "paper_metric": "m",
        "kind": "cumulative",
        "preset": "grpo",
        "design": {"smallest_effect": "5 points", "secondary": "gated"},
        "rows": [{"id": "a", "paper": 1}, {"id": "b", "paper": 2, "changes": {"policy_loss.clip_eps_high": 0.3}}],
    }
    body.update(fields)
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(body))
    return tmp_path


def test_a_new_table_is_just_a_file(tmp_path):
    spec = read_spec("mine", write_spec(tmp_path))
    assert spec.config("b").policy_loss.clip_eps_high == 0.3 and spec.metric == "eval/test/accuracy_t1"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "ladder"}, "not one of: cumulative, leave_one_out"),
        (
            {"rows": [{"id": "a", "changes": {"policy_loss.clip_eps_hi": 0.3}}]},
            r"row 'a'.*did you mean 'policy_loss.clip_eps_high'",
        ),
        (
            {"rows": [{"id": "a", "paper": 1, "changes": {"policy_loss.clip_eps_low": -1}}]},
            "row 'a' does not give a valid config",
        ),
        ({"rows": [{"id": "a", "paper": 1}, {"id": "a", "paper": 1}]}, "used twice"),
        ({"rows": [{"id": "Bad Id"}]}, "lowercase"),
        ({"kind": "leave_one_out"}, "needs 'reference'"),
        ({"rows": [{"id": "a", "paper": "high"}]}, "must be a number"),
        ({"rows": [{"id": "a"}]}, "row 'a' has no 'paper' field"),
        ({"preset": "grpo_plus"}, "unknown preset 'grpo_plus'"),
        ({"rows": [{"id": "a", "paper": 1, "preset": "dapo"}]}, "keeps one preset"),
        ({"rows": [{"id": "a", "paper": 1, "colour": 1}]}, "row .a.: unknown key .colour.; valid: id, label"),
    ],
)
def test_bad_specs_fail_naming_file_row_and_choices(tmp_path, fields, message):
    with pytest.raises(ConfigError, match=message) as error:
        read_spec("mine", write_spec(tmp_path, **fields))
    assert "mine.yaml" in str(error.value)


def test_a_variant_is_its_base_table_under_a_design_of_its_own():
    base, variant = read_spec("dapo_table1"), read_spec("dapo_table1_2p5")
    unsized = [dataclasses.replace(row, primary=None) for row in variant.rows]
    assert unsized == [dataclasses.replace(row, primary=None) for row in base.rows] and variant.kind == base.kind
    assert [row.primary.smallest_effect for row in variant.rows[1:]] == [0.025] * 5
    assert all(variant.config(row.id) == base.config(row.id) for row in base.rows)  # the same runs but for the seeds
    assert (base.design.smallest_effect, variant.design.smallest_effect) == (0.05, 0.025)
    assert variant.design.sequential.maxima == "variance" and base.design.sequential.maxima == "basis"
    assert variant.design.sequential.first_seed == 35 and variant.title != base.title


def write_variant(tmp_path, **fields):
    """A spec 'mine' (write_spec) and a variant 'fine' of it with ``fields`` in place of its own."""
    write_spec(tmp_path)
    body = {"variant_of": "mine", "title": "finer", "design": {"smallest_effect": "2 points", "secondary": "gated"}}
    body.update(fields)
    (tmp_path / "fine.yaml").write_text(
        yaml.safe_dump({key: value for key, value in body.items() if value is not None})
    )
    return tmp_path


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rows": []}, r"fine.yaml: unknown key 'rows'.*valid: variant_of, title, design"),
        ({"design": None}, "fine.yaml: a spec variant needs variant_of, title, design; missing: design"),
        ({"variant_of": "nope"}, "fine.yaml: variant_of 'nope' is not another spec; specs: mine"),
        ({"variant_of": "fine"}, "variant_of 'fine' is not another spec"),
        ({"design": {"smallest_effect": "2 points", "secondary": "sometimes"}}, "fine.yaml: design: secondary"),
    ],
)
def test_a_bad_variant_fails_naming_its_file_and_the_choices(tmp_path, fields, message):
    assert read_spec("fine", write_variant(tmp_path)).design.smallest_effect == 0.02
    with pytest.raises(ConfigError, match=message):
        read_spec("fine", write_variant(tmp_path, **fields))


def test_a_variant_of_a_variant_is_refused(tmp_path):
    write_variant(tmp_path)
    (tmp_path / "finer.yaml").write_text(yaml.safe_dump({"variant_of": "fine", "title": "t", "design": {}}))
    with pytest.raises(ConfigError, match="finer.yaml: variant_of 'fine' is itself a variant"):
        read_spec("finer", tmp_path)


def test_unknown_spec_and_row_list_the_valid_ones(capsys):
    with pytest.raises(ConfigError, match="valid specs: dapo_table1"):
        read_spec("dapo_table9")
    with pytest.raises(ConfigError, match="rows: naive_grpo, overlong_filtering"):
        read_spec("dapo_table1").row("nope")
    assert main(["--spec", "dapo_table1", "--row", "clip_higher"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["policy_loss"]["clip_eps_high"] == 0.28
    assert main(["--spec", "nope"]) == 2 and "valid specs" in capsys.readouterr().err


def test_a_campaign_budget_scales_step_counts_and_keeps_row_differences():
    spec = read_spec("vapo_table1")
    short = Budget(("run.eval_problems=64",), step_scale=0.25)
    vapo, without = spec.config("vapo", short), spec.config("no_value_pretraining", short)
    assert (vapo.run.steps, vapo.run.eval_every, vapo.run.checkpoint_every) == (15, 5, 2)  # 60, 20, 10 x 1/4
    assert vapo.critic.pretrain_steps == 12 and without.critic.pretrain_steps == 0  # 50 x 1/4 rounds to 12
    assert vapo.run.eval_problems == 64 and spec.config("vapo", Budget()) == spec.config("vapo")
    assert scale_steps(load_config("grpo", overrides=["run.steps=1"]), 0.1).run.steps == 1  # never to zero
    with pytest.raises(ConfigError, match=r"'critic.pretrain_steps=5' would erase .*vanilla_ppo: 0.*vapo: 50"):
        spec.config("vapo", Budget(("critic.pretrain_steps=5",)))
    with pytest.raises(ConfigError, match="step scale must be positive"):
        spec.config("vapo", Budget(step_scale=0))


def test_evaluation_points_space_the_evaluations_evenly_whatever_the_step_scale():
    spec = read_spec("dapo_table1")
    for scale, points, every in ((0.334, 11, 2), (1.0, 11, 6), (1.0, 4, 20), (0.05, 11, 1)):
        cfg = spec.config("dynamic_sampling", Budget(step_scale=scale, eval_points=points))
        assert cfg.run.eval_every == every, (scale, points)  # 20 / 10, 60 / 10, 60 / 3, 3 steps: every step
        assert cfg.run.steps == spec.config("dynamic_sampling", Budget(step_scale=scale)).run.steps
    assert spec.config("dynamic_sampling", Budget(step_scale=0.334)).run.eval_every == 7  # none given: 20 of 60, scaled
    with pytest.raises(ConfigError, match="eval_points must be at least 2"):
        spec.config("dynamic_sampling", Budget(eval_points=1))
    assert (
        main(["--spec", "dapo_table1", "--row", "dynamic_sampling", "--step-scale", "0.334", "--eval-points", "11"])
        == 0
    )


def test_the_command_line_prints_a_row_as_a_campaign_runs_it(capsys):
    assert main(["--spec", "vapo_table1", "--row", "vapo", "--step-scale", "0.5", "--set", "run.eval_problems=32"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["run"]["steps"] == 30 and printed["critic"]["pretrain_steps"] == 25
    assert main(["--spec", "vapo_table1", "--row", "vapo", "--set", "rollout.group_size=2"]) == 2
    assert "no_group_sampling: 1" in capsys.readouterr().err


def test_tuned_values_reach_only_the_rows_built_on_their_preset_under_the_rows_changes():
    spec = read_spec("vapo_table1")
    tuned = Budget(tuned={"vapo": ("optim.lr=3e-5", "policy_loss.clip_eps_high=0.3")})
    assert spec.config("vapo", tuned).optim.lr == 3e-5 and spec.config("vapo", tuned).policy_loss.clip_eps_high == 0.3
    assert spec.config("no_clip_higher", tuned).policy_loss.clip_eps_high == 0.2  # the row's change wins
    assert spec.config("dapo", tuned) == spec.config("dapo")  # another preset's row is untouched
    with pytest.raises(ConfigError, match="unknown config key 'optim.lx' in tuned values of preset 'vapo'"):
        spec.config("vapo", Budget(tuned={"vapo": ("optim.lx=1",)}))


def test_tuned_values_come_only_from_a_sweep_that_confirmed_them():
    base = {"overrides": [], "step_scale": 1.0}
    confirmed = {"sweep": "dapo_default", "configuration": "trial7", "verdict": "better", "settings": ["optim.lr=3e-5"]}
    assert campaign_budget({**base, "tuned": {"dapo": confirmed}}).tuned == {"dapo": ("optim.lr=3e-5",)}
    assert campaign_budget({**base, "tuned": {"dapo": ["optim.lr=1e-5"]}}).tuned == {"dapo": ("optim.lr=1e-5",)}
    stands = {"sweep": "dapo_default", "configuration": None, "verdict": "preset stands", "settings": []}
    with pytest.raises(ConfigError) as error:
        campaign_budget({**base, "tuned": {"dapo": stands}})
    message = str(error.value)
    assert message.startswith("workflow config ablations.tuned.dapo: sweep 'dapo_default' confirmed no configuration")
    assert "results/sweeps/dapo_default/confirmation.md" in message and "\n" not in message
    with pytest.raises(ConfigError, match=r"ablations.tuned.dapo: unknown key 'verdicts' \(did you mean 'verdict'"):
        campaign_budget({**base, "tuned": {"dapo": {**confirmed, "verdicts": "better"}}})


ENDPOINT = {"metric": "actor/entropy", "window": [10, 40], "direction": "up", "source": "DAPO §3.1, Fig. 2b"}


def test_endpoints_come_from_the_spec_and_a_row_replaces_them(tmp_path):
    rows = [
        {"id": "a", "paper": 1},
        {"id": "b", "paper": 2, "endpoints": [{**ENDPOINT, "metric": "rollout/truncated_frac"}]},
        {"id": "c", "paper": 3, "endpoints": []},
    ]
    spec = read_spec("mine", write_spec(tmp_path, endpoints=[ENDPOINT], rows=rows))
    (a,) = spec.row("a").endpoints
    assert (a.metric, a.window, a.direction, a.source) == ("actor/entropy", (10, 40), "up", "DAPO §3.1, Fig. 2b")
    assert [e.metric for e in spec.row("b").endpoints] == ["rollout/truncated_frac"] and spec.row("c").endpoints == ()
    assert a.scaled(0.5).window == (5, 20) and a.scaled(0.01).window == (1, 1)


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        (
            {**ENDPOINT, "metric": "actor/entropi"},
            "unknown endpoint metric 'actor/entropi' \\(did you mean actor/entropy",
        ),
        ({**ENDPOINT, "window": [40, 10]}, "window must be \\[first, last\\]"),
        ({**ENDPOINT, "window": [10, 61]}, "window \\[10, 61\\] past the row's last step 60"),
        ({**ENDPOINT, "direction": "higher"}, "direction 'higher' is not one of: up, down"),
        ({**ENDPOINT, "source": ""}, "'source' must cite"),
        ({"metric": "actor/entropy", "window": [1, 2]}, "needs the fields metric, window, direction, source"),
        ({**ENDPOINT, "smallest_effect": -0.1}, "smallest_effect must be a positive number"),
        (
            {**ENDPOINT, "metric": "rollout/truncated_frac", "smallest_effect": 2},
            'is a share in \\[0, 1\\].*"2 points"',
        ),
        ({**ENDPOINT, "smallest_effect": "2 points"}, "smallest_effect must be .* measured as a value"),
        ({**ENDPOINT, "metric": "rollout/incorrect_length_mean", "smallest_effect": "2 s"}, "with a unit: tokens"),
    ],
)
def test_a_bad_endpoint_fails_naming_the_file_and_row(tmp_path, endpoint, message):
    rows = [{"id": "a", "paper": 1}, {"id": "b", "paper": 2, "endpoints": [endpoint]}]
    with pytest.raises(ConfigError, match=message) as error:
        read_spec("mine", write_spec(tmp_path, rows=rows))
    assert "mine.yaml" in str(error.value) and "row 'b'" in str(error.value)


def test_every_shipped_spec_declares_cited_endpoints():
    for name in ("dapo_table1", "vapo_table1", "dr_grpo_bias", "gepo_staleness"):
        spec = read_spec(name)
        declared = [endpoint for row in spec.rows for endpoint in row.endpoints]
        assert declared and all(endpoint.source for endpoint in declared)
        assert all(row.compare_to for row in spec.rows if row.endpoints)


def test_the_row_command_shows_the_endpoints_with_the_resolved_config(capsys):
    assert main(["--spec", "dapo_table1", "--row", "clip_higher", "--step-scale", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "# dapo_table1 / clip_higher" in out and "#   actor/entropy over steps 15-30, expected up (DAPO §3.1" in out
    body = yaml.safe_load(out)  # the endpoints are comments: the output stays a config file
    assert body["policy_loss"]["clip_eps_high"] == 0.28 and body["run"]["steps"] == 30


def test_the_row_command_prints_the_row_as_the_campaign_runs_it_unless_asked_for_full_length(capsys):
    campaign = yaml.safe_load((PROJECT_ROOT / "experiments" / "config.yaml").read_text())["ablations"]
    assert main(["--spec", "dapo_table1", "--row", "clip_higher"]) == 0
    body = yaml.safe_load(capsys.readouterr().out)
    assert body["run"]["steps"] == round(60 * campaign["step_scale"])
    assert body["run"]["eval_every"] == round(body["run"]["steps"] / (campaign["eval_points"] - 1))
    assert body["run"]["final_eval_problems"] == 1024 and body["run"]["eval_splits"] == ["test"]
    assert main(["--spec", "dapo_table1", "--row", "clip_higher", "--full-length"]) == 0
    body = yaml.safe_load(capsys.readouterr().out)
    assert body["run"]["steps"] == 60 and body["run"]["eval_every"] == 20


def test_check_names_a_broken_spec_and_still_checks_the_rest(tmp_path, capsys):
    shutil.copytree(ABLATIONS_DIR / "design_basis", tmp_path / "design_basis")
    for name in ("dapo_table1", "dr_grpo_bias"):
        shutil.copy(ABLATIONS_DIR / f"{name}.yaml", tmp_path)
    (tmp_path / "broken.yaml").write_text("title: no rows here\n")
    assert main(["--check", "--ablations-dir", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("dapo_table1 (cumulative)") and "dr_grpo_bias (leave_one_out)" in out
    assert err.count("\n") == 1 and "broken.yaml" in err


PLAN = {"pilot_seeds": 3, "budget": "4 h", "smallest_effect": "3 points"}


def test_a_seed_plan_reads_its_units():
    spec = read_spec("dapo_table1")
    assert (spec.plan.pilot_seeds, spec.plan.budget_seconds, spec.plan.smallest_effect) == (3, 4 * 3600.0, 0.03)
    entropy = next(e for row in spec.rows for e in row.endpoints if e.metric == "actor/entropy")
    truncated = next(e for row in spec.rows for e in row.endpoints if e.metric == "rollout/truncated_frac")
    assert (entropy.smallest_effect, truncated.smallest_effect) == (0.01, pytest.approx(0.02))


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({**PLAN, "budget": "4"}, "plan: budget must be a positive time with its unit \\(s, min, h\\)"),
        ({**PLAN, "budget": "-2 h"}, "plan: budget must be a positive time"),
        ({**PLAN, "budget": "4 parsecs"}, "plan: budget must be a positive time"),
        ({**PLAN, "smallest_effect": 3}, "plan: smallest_effect: eval/test/accuracy_t1 is a share"),
        ({**PLAN, "smallest_effect": "3 tokens"}, "plan: smallest_effect must be .* with a unit: points, %"),
        ({**PLAN, "smallest_effect": -0.01}, "plan: smallest_effect must be a positive number"),
        ({"pilot_seeds": 3, "budget": "4 h"}, "plan needs exactly the fields .* \\(missing: smallest_effect\\)"),
        ({**PLAN, "pilot_seeds": 1}, "pilot_seeds must be a whole number of at least 2"),
    ],
)
def test_a_bad_seed_plan_fails_naming_the_key(tmp_path, plan, message):
    with pytest.raises(ConfigError, match=message) as error:
        read_spec("mine", write_spec(tmp_path, plan=plan))
    assert "mine.yaml" in str(error.value)


def test_a_planned_spec_needs_every_compared_endpoints_smallest_effect(tmp_path):
    rows = [{"id": "a", "paper": 1}, {"id": "b", "paper": 2, "endpoints": [ENDPOINT]}]
    with pytest.raises(ConfigError, match="row 'b': endpoint actor/entropy has no 'smallest_effect'"):
        read_spec("mine", write_spec(tmp_path, rows=rows, plan=PLAN))
    rows[1]["endpoints"] = [{**ENDPOINT, "smallest_effect": 0.01}]
    assert read_spec("mine", write_spec(tmp_path, rows=rows, plan=PLAN)).row("b").endpoints[0].smallest_effect == 0.01
