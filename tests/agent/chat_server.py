"""A local OpenAI-compatible chat-completions server for the agent tests (loaded by path: tests run with
--import-mode=importlib). It listens on 127.0.0.1 on a free port, replies from a list, and records every request.

A reply is a string (the assistant's message), an int (an HTTP error status with no body), or a tuple
(status, headers, body) for an error with headers such as Retry-After.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatServer:
    def __init__(self, replies: list[Any], usage: bool = True) -> None:
        self.replies, self.requests, self.usage = list(replies), [], usage
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                reply = server.replies.pop(0)
                if isinstance(reply, int):
                    reply = (reply, {}, b"")
                if isinstance(reply, tuple):
                    status, headers, data = reply
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                payload = {
                    "id": "x",
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}],
                }
                if server.usage:
                    payload["usage"] = {"prompt_tokens": 1000 + len(server.requests), "completion_tokens": 50}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def fence(source: str, prose: str = "Here is the kernel.") -> str:
    """A reply with one python code block."""
    return f"{prose}\n```python\n{source.rstrip()}\n```\n"
