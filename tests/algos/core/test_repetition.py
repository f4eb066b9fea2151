import torch

from algos.core.repetition import longest_run, tandem_repeats


def test_longest_run_hand_values():
    flags = torch.tensor([[1, 1, 0, 1, 1, 1, 0], [0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    assert longest_run(flags).tolist() == [3, 0, 7]


def ids(words: str, width: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    vocabulary: dict[str, int] = {}
    tokens = [vocabulary.setdefault(word, len(vocabulary) + 1) for word in words.split()]
    padded = tokens + [0] * (width - len(tokens))
    return torch.tensor([padded]), torch.tensor([[1] * len(tokens) + [0] * (width - len(tokens))])


def test_a_block_said_three_times_is_a_loop():
    line = "check 7 + 3 = 0"  # six tokens: three copies span 18 >= 12
    looped = tandem_repeats(*ids(f"a 7 + 3 = 0 {line} {line} {line} ; answer 0"))
    assert looped.tolist() == [True]


def test_two_copies_and_short_stutters_are_not_loops():
    line = "check 7 + 3 = 0"
    assert tandem_repeats(*ids(f"a 7 + 3 = 0 {line} {line} ; answer 0")).tolist() == [False]
    assert tandem_repeats(*ids("a b a b a b c d")).tolist() == [False]  # span 6 < 12
    worked = "a 1 + 2 = 3 b 3 * 3 = 9 c 9 - 1 = 8 d 8 + 0 = 8 ; answer 8"
    assert tandem_repeats(*ids(worked)).tolist() == [False]


def test_padding_never_counts_as_a_repeat():
    tokens, mask = ids("x y", width=40)
    assert tandem_repeats(tokens, mask).tolist() == [False]  # 38 equal padding ids after the end
