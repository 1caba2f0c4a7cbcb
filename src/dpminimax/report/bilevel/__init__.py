"""The tables and figures of the DP bilevel paper: the collapse, the schedule pilot, Section 7's
tuning, the output rule and the leak attack."""
