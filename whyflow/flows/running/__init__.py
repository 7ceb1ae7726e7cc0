"""Running a plan: the Prefect flow, the plain runner, dispatch, progress, signals, deployments."""
