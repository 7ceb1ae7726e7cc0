"""Review of an answer: sensitivity, the critique's rules and verdict."""
