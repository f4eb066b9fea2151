"""One training run: rollout, update, the driver (``train``), the reward model, resuming, tracking, run
files, the metric list and the built-in base (SFT)."""
