"""What many tests share: a pytest plugin that decides whether a run needs Django."""
