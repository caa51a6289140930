"""Mock provider server and mock ACP agent, for tests, benchmarks, demos and real agent CLIs.

Run it: `python -m recovery.mock --port 8765` (loopback only). In tests: `running_mock_server()`
and `MockProvider` in recovery.mock.testing.

Wires (server.py), each failure in that provider's own shape (errors.py, *_wire.py):

    POST /v1/messages                                   Anthropic Messages (Claude Code)
    POST /v1/chat/completions                           OpenAI Chat Completions
    POST /v1/responses                                  OpenAI Responses (Codex)
    POST /v1beta/models/{model}:streamGenerateContent?alt=sse, :generateContent, :countTokens
                                                        Gemini API (Gemini CLI); /v1/models too

Choosing a scenario (selection.py; names in scenarios.py, families beside it):

    [[mock:overloaded:2]] tell me a joke    a marker anywhere in the person's latest text
    tell me a joke [[mock overloaded:2]]    (the last text block of the last user message, with
                                            <system-reminder> blocks taken out); real agents
                                            leave it alone
    /overloaded:2 tell me a joke            the old leading command, still read; Claude Code
                                            swallows it as its own slash command
    POST /_mock/script {"scenario": "overloaded:2", "conversation": "session-42"}
                                            force a scenario on one conversation (or a "wire",
                                            "model", "path"); newest wins; DELETE /_mock/script

Asking an agent for its own tool (tool_asks.py: the tool and its argument shape are read from
the tools the request declares; `+` is a blank and `%XX` a UTF-8 byte in marker arguments):

    [[mock:edit:PATH:TEXT]]                 Write / write_file / apply_patch writes TEXT to PATH
                                            (Claude Code and Codex look first: Read, cat; a file
                                            that is there gets Edit / "*** Update File")
    [[mock:run:CMD]]                        Bash / run_shell_command / exec_command runs CMD
    [[mock:edit-then-overloaded:PATH:TEXT[:N]]]
                                            the edit, then the wire's overloaded error N times (1)
                                            on the call that carries the tool's result
    The call after the tool's result answers "The edit went through / was refused / failed. ..."

Conversations (conversations.py), in this order:

    1. a base-URL prefix: http://127.0.0.1:8765/conversations/{id}/v1/messages (any wire)
    2. the X-Mock-Conversation header
    3. otherwise the wire plus the first user message

Attempts count per conversation, scenario and model call: a retry of the same conversation
continues the script ("529 twice, then success" across the app's retries), and a script that has
fully played starts over, so the same example works in every new session. What should name a
conversation: our SDK adapters send `X-Mock-Conversation: <session id>`; agent launchers put
`/conversations/<session id>` in the agent's base URL (ANTHROPIC_BASE_URL, Codex
`model_providers.*.base_url`, GOOGLE_GEMINI_BASE_URL). Agents' own session ids are not used: a
fresh agent process (and session) serves each attempt.

Control and inspection (control.py, incident.py): GET /_mock/requests[?wire=&conversation=],
GET /_mock/conversations, POST /_mock/reset, /_mock/incident (fail every request for a time).

The mock ACP agent (acp_agent.py, acp_scenarios.py) takes the same marker for its own scenarios
and counts per session working directory.
"""
