"""Development and test tooling: not part of the product."""
