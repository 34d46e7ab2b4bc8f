"""The decision phase (TRUSTED, pure functions): every status and EvalResult decided from what the parent observed."""
