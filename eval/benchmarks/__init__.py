"""Benchmarks: loaders, graders, suites with their protocols, pass@k metrics, HumanEval."""
