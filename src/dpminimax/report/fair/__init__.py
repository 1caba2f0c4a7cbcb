"""The figures of the fair-learning papers (RaCO-DP, DP-FERMI): trade-offs, constraint satisfaction
and their ablations."""
