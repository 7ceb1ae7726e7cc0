"""The job store: job folders, their state, history and summaries."""
