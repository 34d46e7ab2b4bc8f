"""Commands of this area; registered on bench.app.app."""

from bench.app import app  # noqa: F401
