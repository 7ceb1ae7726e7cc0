"""The code step, first half: write the code for this round of the loop.

Without a model the code is the filled worked example (a retry tries the next example that
fits, since the same template would fail the same way). With a model, round 1 asks for code
grounded by the closest examples' code; later rounds show the failed code and its traceback
(the fixing prompt) together with every earlier failure, so the model does not repeat one.
"""

from __future__ import annotations

from whyflow.ask._shared import first_frame, llm_text
from whyflow.ask.planning import attempt_code
from whyflow.ask.state import AskState
from whyflow.ask.view import AskView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus
from whyflow.core.view import required
from whyflow.runtime.llm.parse import strip_code_fences

__all__ = ["CodeWriterAgent"]

_RULES = """Write Python that answers the question from the data.
- The datasets are pandas DataFrames in the dict `datasets` (the first is also `df`); the view
  names are the keys. pandas (pd), numpy (np) and scipy.stats (stats) are available: import them.
- Store the final answer in a variable named `result`: a number, a string, a list, a dict, or a
  DataFrame (a table). Compute every number; never write a number you did not compute.
- For a chart, set `result` to a Vega-Lite v5 spec (a dict with "$schema", "mark", "encoding" and
  inline "data": {"values": [...]}) with at most 100 rows: aggregate first.
- Code is stateless: redo any transformation you need.
Return only the Python code."""

_FIX = """Your previous code failed. Read the error, find the cause (a missing column, a name used
before it is defined, a wrong method or type) and return corrected code that keeps the intent.
Do not repeat an approach that already failed."""


class CodeWriterAgent(Agent[AgentParams]):
    """Writes the round's code: the filled example, or the model's (fixed) code."""

    NAME = "code_writer"
    DESCRIPTION = "write Python for the question: a filled worked example, or the model's code"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question", "datasets", "plan")
    OPTIONAL_STATE_FIELDS = ("data_summary", "code", "error", "failed_attempts", "attempts")
    WRITES_STATE_FIELDS = ("code",)
    JOB_STATUS = JobStatus.EXPLORATORY_ANALYSIS
    PROGRESS_WEIGHT = 1.0

    def run(self, view: AskView, params: AgentParams, ctx: AgentContext) -> AgentResult:
        plan = required(view.plan, "plan")
        filled = plan.filled
        last_round = view.iteration_count + 1 >= view.max_iterations and bool(view.failed_attempts)
        if ctx.llm is not None and plan.mode == "model" and filled is not None and last_round:
            tried = {a.code for a in view.failed_attempts}
            if filled.code not in tried:  # the model's code failed every time: the worked example's last
                return AgentResult(
                    updates={"code": filled.code}, summary=f"last attempt: example '{filled.example_id}'"
                )
        if ctx.llm is not None and plan.mode == "model":
            code = self._model_code(view, ctx)
            result = AgentResult(updates={"code": code}, summary=f"model code, {len(code.splitlines())} lines")
            ctx.llm.annotate(result, changed=["code"])
            return result
        if filled is None:
            raise AgentError(f"the plan has no worked example to fill (route {plan.route}) and no model is on")
        question = str(plan.parameters.get("question") or view.question)
        tried = {a.code for a in view.failed_attempts}
        code, note = attempt_code(plan, question, first_frame(view.datasets), tried)
        return AgentResult(updates={"code": code}, summary=note)

    @staticmethod
    def _model_code(view: AskView, ctx: AgentContext) -> str:
        plan = required(view.plan, "plan")
        filled = plan.filled
        question = str(plan.parameters.get("question") or view.question)
        grounding = f"\n\nA worked example for a similar question:\n```python\n{filled.code}```" if filled else ""
        from whyflow.runtime.llm import data_block

        names = ", ".join(view.datasets)
        prompt = f"Question: {question}\n\nDatasets ({names}):\n{data_block('data summary', view.data_summary[:4000])}{grounding}"
        system = _RULES
        if view.failed_attempts:
            system = _RULES + "\n\n" + _FIX
            history = "\n\n".join(
                f"Attempt {a.attempt}:\n```python\n{a.code}```\nError:\n{a.error[-1500:]}" for a in view.failed_attempts
            )
            prompt += f"\n\nFailed attempts so far (the last one first to fix):\n{history}"
        reply = llm_text(ctx.llm, system, prompt, purpose="ask_code")
        if reply is None:  # the failure is recorded by the runner and the loop asks again
            return 'raise RuntimeError("the model gave no code this round")\n'
        return strip_code_fences(reply).strip() + "\n"
