from algos.sft import length_bucketed


def test_length_bucketing_keeps_every_row_and_narrows_batches():
    rows = [([1], [7] * (1 + (i * 37) % 30)) for i in range(640)]
    bucketed = length_bucketed(rows, batch_size=16, seed=0)
    assert sorted(bucketed) == sorted(rows)
    assert bucketed == length_bucketed(rows, batch_size=16, seed=0)

    def mean_length_spread(ordered):
        spreads = [max(map(len, s)) - min(map(len, s)) for s in ([r[1] for r in ordered[i : i + 16]] for i in range(0, 640, 16))]
        return sum(spreads) / len(spreads)

    assert mean_length_spread(bucketed) < mean_length_spread(rows) / 4
