from eval.tasks.config import TaskConfig
from eval.tasks.sources import builtin_task, problem_list_task


def test_the_final_held_out_sets_extend_the_earlier_ones():
    task = builtin_task(TaskConfig(), ("validation", "test"), eval_problems=16, final_eval_problems=64)
    for split in ("validation", "test"):
        earlier, final = task.held_out(final=False)[split], task.held_out(final=True)[split]
        assert len(earlier) == 16 and len(final) == 64 and final[:16] == earlier
        assert len({p.prompt for p in final}) == 64


def test_without_final_sets_every_evaluation_uses_the_same_ones():
    builtin = builtin_task(TaskConfig(), ("test",), eval_problems=16)
    assert builtin.held_out(final=True) is builtin.held_out(final=False)
    given = problem_list_task(builtin.evaluation["test"], {"test": builtin.evaluation["test"][:4]}, builtin.verifier)
    assert len(given.held_out(final=True)["test"]) == 4
