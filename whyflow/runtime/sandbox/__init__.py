"""The code sandbox: generated code runs in a confined child process, never in-process."""
