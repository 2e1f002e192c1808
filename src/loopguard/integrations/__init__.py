"""Host adapters: guard the streams and tool calls of LLM SDKs (SPEC §1; research/ecosystem.md).

- :mod:`loopguard.integrations.openai` — OpenAI-compatible Chat Completions
  streams (``guard_stream`` / ``aguard_stream``), ``resume_messages``,
  ``create_with_rescue``.

Adapters read chunks by field name and never import the SDK they serve.
"""
