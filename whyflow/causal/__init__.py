"""Family 1, causal analysis: its state, its agents and the statistics they use."""
