"""The client against a scripted OpenAI-compatible server: use, re-ask, fallback, never a crash."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from tests.llm.scripted import Scripted, ScriptedLLM
from whyflow.runtime.llm import client_for
from whyflow.runtime.llm.client import LLMClient, ToolCall
from whyflow.runtime.llm.parse import json_candidates, strip_code_fences
from whyflow.runtime.llm.validate import check_edges, unknown_columns

COLUMNS = ["age", "education", "income", "treated", "outcome"]


class Role(BaseModel):
    column: str
    role: Literal["confounder", "mediator", "other"]


class Edge(BaseModel):
    source: str
    target: str


class Graph(BaseModel):
    edges: list[Edge]


class Estimate(BaseModel):
    """Estimate with a method."""

    method: str


class Finish(BaseModel):
    """Stop."""

    thought: str = ""


def client(srv: ScriptedLLM, job: Path, step: str = "step", **settings: Any) -> LLMClient:
    cfg = {"enabled": True, "base_url": srv.url, "timeout_s": 2.0, "max_retries": 1, **settings}
    llm = client_for(cfg, job, step, backoff_s=0.01)
    assert isinstance(llm, LLMClient)
    return llm


def ask(text: str = "Which role has age?") -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def columns_exist(r: Role) -> list[str]:
    return unknown_columns([r.column], COLUMNS)


def test_good_answer_is_used_with_schema_usage_and_full_prompt(tmp_path: Path) -> None:
    with ScriptedLLM([Scripted(json.dumps({"column": "age", "role": "confounder"}), usage=(30, 7))]) as srv:
        llm = client(srv, tmp_path)
        got = llm.structured(ask(), Role, purpose="roles", check=columns_exist)
    assert got == Role(column="age", role="confounder")
    body = srv.chats()[0]
    assert body["model"] == "scripted-model"  # no model named: the first one listed
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["role"]["enum"]
    assert llm.usage["total_tokens"] == 37 and llm.usage["calls"] == 1
    assert llm.calls[0]["messages"][-1]["content"] == "Which role has age?"
    assert llm.calls[0]["reply"].startswith("{")
    assert (tmp_path / "llm" / "calls.jsonl").read_text().count("\n") == 1


def test_fenced_json_after_prose_is_parsed(tmp_path: Path) -> None:
    reply = 'Sure! Here it is:\n```json\n{"column": "income", "role": "mediator"}\n```\nHope it helps.'
    with ScriptedLLM([Scripted(reply)]) as srv:
        got = client(srv, tmp_path).structured(ask(), Role, purpose="roles")
    assert got == Role(column="income", role="mediator")


def test_code_comes_out_of_its_fence_and_json_out_of_every_fence() -> None:
    reply = "Here:\n```python\nresult = 1\n```\nor\n```python\nresult = 2\n```"
    assert strip_code_fences(reply) == "result = 1\n"  # the first fence only
    for tag in ("", "py", "sql"):
        assert strip_code_fences(f"```{tag}\nSELECT 1\n```") == "SELECT 1\n"
    assert strip_code_fences("result = 3") == "result = 3"
    assert strip_code_fences("```result = 3```") == "```result = 3```"  # code on the fence's line stays as written
    assert strip_code_fences("```json\n{}\n```") == "```json\n{}\n```"  # not a code fence
    # JSON is read from every fence, also one on the fence's own line
    assert json_candidates('```json {"a": 1}``` and ```\n{"b": 2}\n```')[:2] == [{"a": 1}, {"b": 2}]


def test_junk_json_is_reasked_once_then_none(tmp_path: Path) -> None:
    with ScriptedLLM(default=Scripted('{"column": "age", "role": ')) as srv:
        llm = client(srv, tmp_path)
        got = llm.structured(ask(), Role, purpose="roles")
    assert got is None and len(srv.chats()) == 2
    assert "rejected" in srv.chats()[1]["messages"][-1]["content"]
    assert [r["purpose"] for r in llm.rejections] == ["roles", "roles"]
    assert llm.report()["used"] is False


def test_hallucinated_column_rejected_then_corrected(tmp_path: Path) -> None:
    replies = [
        Scripted('{"column": "salary", "role": "confounder"}'),
        Scripted('{"column": "income", "role": "confounder"}'),
    ]
    with ScriptedLLM(replies) as srv:
        llm = client(srv, tmp_path)
        got = llm.structured(ask(), Role, purpose="roles", check=columns_exist)
    assert got == Role(column="income", role="confounder")
    assert "'salary' is not a column" in llm.rejections[0]["reasons"][0]
    assert "salary" in srv.chats()[1]["messages"][-1]["content"]  # the re-ask says why


def test_role_outside_the_allowed_set_falls_back(tmp_path: Path) -> None:
    with ScriptedLLM(default=Scripted('{"column": "age", "role": "treatment"}')) as srv:
        llm = client(srv, tmp_path)
        assert llm.structured(ask(), Role, purpose="roles") is None
    assert "role" in llm.rejections[0]["reasons"][0]


def test_cyclic_graph_rejected(tmp_path: Path) -> None:
    cyclic = {"edges": [{"source": "age", "target": "income"}, {"source": "income", "target": "age"}]}
    with ScriptedLLM(default=Scripted(json.dumps(cyclic))) as srv:
        llm = client(srv, tmp_path)
        got = llm.structured(
            ask("graph?"),
            Graph,
            purpose="graph",
            check=lambda g: check_edges([(e.source, e.target) for e in g.edges], COLUMNS),
        )
    assert got is None
    assert any("cycle" in r for r in llm.rejections[-1]["reasons"])


def test_empty_reply_falls_back(tmp_path: Path) -> None:
    with ScriptedLLM(default=Scripted("")) as srv:
        llm = client(srv, tmp_path)
        assert llm.structured(ask(), Role, purpose="roles") is None
        assert llm.text(ask("summary"), purpose="summary") is None
    assert llm.rejections[0]["reasons"] == ["empty reply"]


def test_timeout_retried_then_none_quickly(tmp_path: Path) -> None:
    with ScriptedLLM(default=Scripted('{"column": "age", "role": "other"}', delay=1.5)) as srv:
        llm = client(srv, tmp_path, timeout_s=0.3, max_retries=1)
        started = time.perf_counter()
        assert llm.structured(ask(), Role, purpose="roles") is None
        assert time.perf_counter() - started < 2.5
    assert len(srv.chats()) == 2  # one retry
    assert "Timeout" in llm.calls[-1]["error"]


def test_429_then_success(tmp_path: Path) -> None:
    replies = [Scripted(status=429, headers={"retry-after": "0.05"}), Scripted('{"column": "age", "role": "other"}')]
    with ScriptedLLM(replies) as srv:
        got = client(srv, tmp_path).structured(ask(), Role, purpose="roles")
    assert got == Role(column="age", role="other") and len(srv.chats()) == 2


def test_500_gives_up_and_marks_the_endpoint_unavailable(tmp_path: Path) -> None:
    with ScriptedLLM(default=Scripted(status=500)) as srv:
        llm = client(srv, tmp_path, max_retries=1)
        for _ in range(4):
            assert llm.text(ask("hello"), purpose="p") is None
        asked = len(srv.chats())
    assert asked == 6  # 3 calls x 2 attempts, then the endpoint is given up for the run
    assert llm.available is False and "500" in str(llm.run.unavailable)


def test_no_server_falls_back_without_delay(tmp_path: Path) -> None:
    llm = client_for({"enabled": True, "base_url": "http://127.0.0.1:9/v1", "max_retries": 0}, tmp_path, "s")
    started = time.perf_counter()
    assert llm.structured(ask(), Role, purpose="roles") is None
    assert llm.text(ask(), purpose="x") is None
    assert time.perf_counter() - started < 5 and "cannot list models" in str(llm.run.unavailable)


def test_server_without_json_schema_gets_plain_prompt(tmp_path: Path) -> None:
    with ScriptedLLM([Scripted('{"column": "age", "role": "other"}')], refuse=("response_format",)) as srv:
        llm = client(srv, tmp_path)
        got = llm.structured(ask(), Role, purpose="roles")
    assert got is not None and llm.run.schema_ok is False
    assert "response_format" not in srv.chats()[-1] and "JSON schema" in srv.chats()[-1]["messages"][0]["content"]


def test_cache_means_resume_never_asks_twice(tmp_path: Path) -> None:
    with ScriptedLLM(default=Scripted('{"column": "age", "role": "other"}')) as srv:
        first = client(srv, tmp_path, model="m1").structured(ask(), Role, purpose="roles")
        from whyflow.runtime.llm import reset_runs

        reset_runs()  # as a new process would (whyflow resume)
        again = client(srv, tmp_path, model="m1")
        second = again.structured(ask(), Role, purpose="roles")
        other_model = client(srv, tmp_path, model="m2").structured(ask(), Role, purpose="roles")
    assert first == second == other_model
    assert len(srv.chats()) == 2  # m1 once, m2 once
    assert again.usage == {"calls": 1, "cached_calls": 1}


def test_token_budget_stops_calls(tmp_path: Path) -> None:
    with ScriptedLLM(default=Scripted("fine", usage=(60, 10))) as srv:
        llm = client(srv, tmp_path, max_tokens_per_run=100, cache=False)
        assert llm.text(ask("a"), purpose="a") == "fine"
        assert llm.text(ask("b"), purpose="b") == "fine"  # 70 used, 30 left
        assert llm.text(ask("c"), purpose="c") is None  # 140 used: spent
    assert len(srv.chats()) == 2 and "budget" in llm.calls[-1]["error"]
    assert srv.chats()[1]["max_tokens"] == 30


def test_native_tool_call(tmp_path: Path) -> None:
    with ScriptedLLM([Scripted(None, tool_calls=[("estimate", '{"method": "aipw"}')])]) as srv:
        got = client(srv, tmp_path).tool_call(ask("next?"), {"estimate": Estimate, "finish": Finish}, purpose="t")
    assert isinstance(got, ToolCall) and got.native and got.arguments == Estimate(method="aipw")
    assert {t["function"]["name"] for t in srv.chats()[0]["tools"]} == {"estimate", "finish"}


def test_tool_call_written_in_tags_or_json(tmp_path: Path) -> None:
    replies = [
        Scripted('I will estimate.\n<tool_call>\n{"name": "estimate", "arguments": {"method": "ols"}}\n</tool_call>'),
        Scripted('```json\n{"name": "finish", "arguments": {}}\n```'),
    ]
    with ScriptedLLM(replies) as srv:
        llm = client(srv, tmp_path)
        tools: dict[str, type[BaseModel]] = {"estimate": Estimate, "finish": Finish}
        first = llm.tool_call(ask("one"), tools, purpose="t")
        second = llm.tool_call(ask("two"), tools, purpose="t")
    assert isinstance(first, ToolCall) and not first.native and first.arguments == Estimate(method="ols")
    assert isinstance(second, ToolCall) and second.name == "finish"


def test_invented_tool_reasked_then_prose_returned(tmp_path: Path) -> None:
    replies = [Scripted('{"name": "delete_data", "arguments": {}}'), Scripted("I think we are done.")]
    with ScriptedLLM(replies) as srv:
        llm = client(srv, tmp_path)
        got = llm.tool_call(ask(), {"estimate": Estimate}, purpose="t")
    assert got == "I think we are done."
    assert "not a tool" in llm.rejections[0]["reasons"][0]


def test_malformed_response_body_is_a_failed_call(tmp_path: Path) -> None:
    with ScriptedLLM(default=Scripted(raw="<html>bad gateway</html>")) as srv:
        llm = client(srv, tmp_path, max_retries=0)
        assert llm.text(ask(), purpose="x") is None
    assert llm.calls[-1]["error"]


def test_annotate_puts_usage_prompts_and_changes_in_the_result(tmp_path: Path) -> None:
    from whyflow.core.agent import AgentResult

    with ScriptedLLM(default=Scripted("ok", usage=(5, 2))) as srv:
        llm = client(srv, tmp_path)
        llm.text(ask(), purpose="summary")
    result = AgentResult(updates={}, token_usage={"total_tokens": 1})
    llm.annotate(result, ["added a summary"])
    assert result.token_usage["total_tokens"] == 8
    assert result.outputs["llm_use"]["used"] and result.outputs["llm_use"]["changed"] == ["added a summary"]
    assert result.outputs["llm_calls"][0]["messages"][-1]["content"] == "Which role has age?"
    assert result.summary == "[model used: 1 call(s), 7 tokens]"  # shown on the CLI's line for the step


def test_client_pickles_for_dask_workers(tmp_path: Path) -> None:
    import pickle

    with ScriptedLLM(default=Scripted('{"column": "age", "role": "other"}')) as srv:
        llm = client(srv, tmp_path)
        assert llm.structured(ask(), Role, purpose="roles") is not None
        copy = pickle.loads(pickle.dumps(llm))
        assert copy.structured(ask(), Role, purpose="roles") == Role(column="age", role="other")
    assert len(srv.chats()) == 1 and copy.usage["cached_calls"] == 1  # the worker reads the job's cache
