"""Mock provider server (Anthropic and OpenAI wire formats) for tests, benchmarks and `make run`."""
