"""The build phase: the UNTRUSTED child (child.py) that imports a kernel and exports its program, its sandbox
(sandbox.py), and the trusted parent side that runs and observes it (builder.py -> BuildArtifact)."""
