"""UNTRUSTED: the sandboxed build child, the only place candidate code runs (never imported by the parent)."""
