"""The run phase (TRUSTED, never imports candidate code): the runner process (server.py, program.py, loop.py),
the parent's handle on it (session.py), timing isolation (isolation.py) and the trace parser (timing.py)."""
