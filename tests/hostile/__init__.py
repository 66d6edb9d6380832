"""Hostile input: what an attacker sends, one module per class of attack; kiln answers each
with a clear 4xx or refuses it, and leaves every repository sound."""
