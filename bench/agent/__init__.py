"""Agents against JAXBench: the paper's prompts (`bench prompt`), its methods (`bench agent run`), pluggable generators.

Modules: spec (what a task is, at a size), prompts (Jinja rendering of Appendix B), feedback (harness result ->
the iterative feedback block), context (the iterative + context pack), reply (code-block parsing), generators
(command, OpenAI-compatible endpoint, built-in template search), evaluation (the one call into the harness),
journal (append-only per-sample records), run (the methods' loop and the submission writer), commands (CLI).
"""
