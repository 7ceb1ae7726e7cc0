"""Effect estimation: the estimator menu, backdoor and design-based estimators, propensity."""
