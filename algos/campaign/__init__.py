"""Many runs: ablation specs and their rows, hyperparameter sweeps, the benchmark beside TRL."""
