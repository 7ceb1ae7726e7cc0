"""Recipes: strict YAML into typed specs, resolved into a plan and checked as a whole."""
