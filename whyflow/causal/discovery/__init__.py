"""The causal graph and the adjustment set: discovery, the DAG expert, confounders."""
