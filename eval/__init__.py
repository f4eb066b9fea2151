"""Tasks and benchmarks: the built-in synthetic task, benchmark loaders, graders and metrics."""
