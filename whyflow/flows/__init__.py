"""The orchestration: recipes loaded and validated, jobs stored, agents run as Prefect flows.

Layers, top to bottom: :mod:`~whyflow.flows.job_flow` (the one Prefect flow),
:mod:`~whyflow.flows.ask_jobs` (a question's job), :mod:`~whyflow.flows.running` (the runner),
:mod:`~whyflow.flows.jobstore` (job folders and their state), :mod:`~whyflow.flows.recipes`
(strict YAML into a plan) and :mod:`~whyflow.flows.errors`.
"""
