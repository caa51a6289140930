"""What many tests share: factories for the app's rows, and a pytest plugin that decides whether a
run needs Django."""
