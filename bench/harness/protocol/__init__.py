"""What the harness's processes share: messages, transport, the child-process handle, task, result."""
