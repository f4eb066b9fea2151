from transformers import AutoTokenizer

from eval.tasks.synthetic import ChainTask
from eval.tasks.tokenizer import build_tokenizer


def test_every_task_symbol_is_one_known_token():
    task = ChainTask()
    tokenizer = build_tokenizer(task.vocabulary())
    for problem in task.problems("train", 50):
        text = f"{problem.prompt} {problem.solution}"
        ids = tokenizer(text)["input_ids"]
        assert ids[0] == tokenizer.bos_token_id
        assert tokenizer.unk_token_id not in ids
        assert len(ids) == len(text.split()) + 1
        assert tokenizer.decode(ids, skip_special_tokens=True) == text


def test_saves_and_loads_with_auto_tokenizer(tmp_path):
    tokenizer = build_tokenizer(ChainTask(modulus=13).vocabulary())
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded("12 * 3 =")["input_ids"] == tokenizer("12 * 3 =")["input_ids"]
    text = "12 * 3 = 10 ; answer 10"
    assert loaded.decode(loaded(text)["input_ids"], skip_special_tokens=True) == text
    assert (loaded.pad_token, loaded.eos_token, loaded.padding_side) == ("<pad>", "<eos>", "left")
    batch = loaded(["1 + 2 =", "1 + 2 * 3 ="], padding=True)
    assert batch["input_ids"][0][0] == loaded.pad_token_id  # left padding for batched generation
