"""Tasks: the problem record, task sources, the built-in tasks, their tokenizer and config. Imports nothing
from ``algos``."""
