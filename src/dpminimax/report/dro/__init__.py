"""The tables and figures of DP-DRO: Table 2's attack, Table 3 and the training curves of Figs.
1-3."""
