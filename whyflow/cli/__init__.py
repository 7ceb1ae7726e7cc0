"""The `whyflow` command."""
