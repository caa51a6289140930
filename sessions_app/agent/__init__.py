"""The direct-provider agent loop: transcript -> model call -> streamed rows -> tools -> repeat."""
