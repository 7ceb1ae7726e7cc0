"""The ask-the-data agents: plan, write code, run it in the sandbox, evaluate, explain.

They work on :class:`~whyflow.ask.state.AskState` (``whyflow/recipes/ask.yaml`` says
``state: ask``). Without a model (``ctx.llm is None``) they fill the best worked example of
:mod:`whyflow.ask.tools` from the question; with one, the model plans and writes the code, grounded by
the retrieved examples, and sees the traceback of each failed attempt.
"""
