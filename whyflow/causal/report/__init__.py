"""The report: next steps and the executed notebook."""
