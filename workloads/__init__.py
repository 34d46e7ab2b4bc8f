"""The 50 JAXBench workloads, one module per upstream id (e.g. `workloads/8p_GEMM.py`).

Module names start with a digit, so load them with `bench.registry.load_workload(id)`
(or `importlib.import_module("workloads.8p_GEMM")`), not with an import statement.
"""
