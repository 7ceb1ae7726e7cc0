"""The spine every family shares: the agent contract, the job lifecycle, the read-only view, errors."""
