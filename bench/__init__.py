"""JAXBench: evaluate AI-generated Pallas/JAX kernels against XLA baselines and rank them.

HARNESS_VERSION is bumped whenever a change to the harness could change a verdict or a timing;
`bench ingest` re-evaluates every submission whose stored rows carry an older harness version.
"""

__version__ = "0.1.0"
HARNESS_VERSION = "6"
