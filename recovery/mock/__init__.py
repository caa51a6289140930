"""Mock provider server (Anthropic Messages, OpenAI Chat Completions and Responses, Gemini API)
and mock ACP agent, for tests, benchmarks and `make run`. How scenarios are chosen and counted:
recovery.mock.server."""
