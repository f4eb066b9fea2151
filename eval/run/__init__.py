"""Evaluating a model on a benchmark: the command, and the engines that generate for it."""
