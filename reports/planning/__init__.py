"""How many seeds each row runs: fixed designs from a design basis, Stein's two-stage plans, and the simulated
tables that check both."""
