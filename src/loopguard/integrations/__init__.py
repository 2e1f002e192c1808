"""Host adapters: guard the streams of LLM SDKs (docs/spec.md §3).

- :mod:`loopguard.integrations.openai` — OpenAI-compatible Chat Completions
  streams (``guard_stream`` / ``aguard_stream``), ``resume_messages``,
  ``create_with_rescue`` / ``acreate_with_rescue``;
- :mod:`loopguard.integrations.responses` — OpenAI Responses API events
  (``guard_response_stream`` / ``aguard_response_stream``);
- :mod:`loopguard.integrations.anthropic` — Anthropic Messages events
  (``guard_stream`` / ``aguard_stream``, ``resume_messages``).

Host integrations (issue 19), each importing its host package, which ``import loopguard`` never
does (install the extra of the same name):

- :mod:`loopguard.integrations.litellm` — ``LoopGuardrail``, a LiteLLM proxy guardrail
  (``loopguard[litellm]``);
- :mod:`loopguard.integrations.langchain` — ``LoopGuardMiddleware``, a LangChain v1
  ``AgentMiddleware`` (``loopguard[langchain]``);
- :mod:`loopguard.integrations.mcp` — a ``fastmcp`` ``LoopGuardMiddleware`` and ``guard_proxy``
  in front of any MCP server (``loopguard[mcp]``);
- :mod:`loopguard.integrations.openai_agents` — tool guardrails, hooks and a guarded run stream
  for the OpenAI Agents SDK, ``guard_agent`` (``loopguard[openai-agents]``);
- :mod:`loopguard.integrations.pydantic_ai` — ``LoopGuardCapability``, a pydantic-ai capability
  skipping a denied tool execution with the reason (``loopguard[pydantic-ai]``).

Adapters read chunks by field name (dicts and SDK objects of any version)
and never import the SDK they serve.  Tool bodies go behind
:func:`loopguard.wrap_tool`; conversations are :class:`loopguard.Session`.
"""
