"""The statistics every verdict rests on: tests and intervals over a row's seeds, multiplicity control over a
table's comparisons, the verdict rules, and the simulations that measure their level and power."""
