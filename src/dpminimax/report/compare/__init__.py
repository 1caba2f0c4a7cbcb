"""The cross-paper comparison: leaderboards, dominance, performance gain and Pareto fronts."""
