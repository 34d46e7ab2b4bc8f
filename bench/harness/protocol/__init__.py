"""What the harness's processes share: messages and their framing, the child-process handle, task, result."""
