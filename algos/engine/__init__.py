"""What runs a model: loading, generation, log-probabilities of sequences, processes, checkpoints, seeding,
held-out accuracy and provenance. Imports the math and the config, never the trainer."""
