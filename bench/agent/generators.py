"""Generators: whatever turns a prompt into a reply. Three kinds, one interface (`generate(prompt) -> Reply`).

- CommandGenerator: any program; it reads the prompt as JSON on stdin (Prompt.as_json: messages, workload, method,
  chain, turn, feedback, history) and prints the model's reply on stdout.
- OpenAIGenerator: an OpenAI-compatible chat-completions endpoint over plain HTTP (urllib). The key is read from the
  environment variable the user names, sent only in the Authorization header, and written nowhere.
- TemplateSearchGenerator (bench.agent.template_search): no model; deterministic search over our Pallas kernels.

Token counts come from the endpoint's `usage` when it reports them; otherwise they are estimated as characters / 4
(`Reply.estimated`), which the run's token budget and the trajectory use alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Protocol

from bench.agent.prompts import Prompt


@dataclass(frozen=True)
class Reply:
    text: str
    tokens_in: int
    tokens_out: int
    estimated: bool = False


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


class GeneratorError(RuntimeError):
    """The generator could not produce a reply (the run stops; what is journaled stays, a rerun resumes)."""


class Generator(Protocol):
    name: str

    def generate(self, prompt: Prompt) -> Reply: ...


def _estimated(prompt: Prompt, text: str) -> Reply:
    return Reply(text, estimate_tokens(prompt.system) + estimate_tokens(prompt.user), estimate_tokens(text), True)


class CommandGenerator:
    """`sh -c COMMAND` per prompt; stdin: the prompt as JSON; stdout: the reply. A non-zero exit is an error."""

    def __init__(self, command: str, timeout_s: float = 600.0) -> None:
        self.command, self.timeout_s = command, timeout_s
        self.name = f"command: {command}"

    def generate(self, prompt: Prompt) -> Reply:
        try:
            proc = subprocess.run(["sh", "-c", self.command], input=json.dumps(prompt.as_json()), text=True,
                                  capture_output=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise GeneratorError(f"generator command timed out after {self.timeout_s} s") from None
        if proc.returncode != 0:
            raise GeneratorError(f"generator command exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
        return _estimated(prompt, proc.stdout)


class OpenAIGenerator:
    """POST {base_url}/chat/completions with {model, messages[, temperature, seed, max_tokens]}."""

    RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}

    def __init__(self, base_url: str, model: str, api_key_env: str | None = None, *, temperature: float | None = None,
                 max_tokens: int | None = None, timeout_s: float = 600.0, retries: int = 4) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key_env = model, api_key_env
        self.temperature, self.max_tokens, self.timeout_s, self.retries = temperature, max_tokens, timeout_s, retries
        self.name = f"openai-compatible: {model} at {base_url}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise GeneratorError(f"environment variable {self.api_key_env} (the API key) is not set")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _body(self, prompt: Prompt) -> bytes:
        body: dict = {"model": self.model, "messages": prompt.messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        # a per-sample seed: providers that honour it make a rerun of the same sample reproducible
        body["seed"] = prompt.chain * 1000 + prompt.turn
        return json.dumps(body).encode()

    def generate(self, prompt: Prompt) -> Reply:
        data, last = self._body(prompt), ""
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.url, data=data, headers=self._headers(), method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                    payload = json.loads(resp.read().decode("utf-8"))
                return self._reply(prompt, payload)
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}: {e.read()[:300].decode('utf-8', 'replace')}"
                if e.code not in self.RETRY_STATUS:
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                last = f"{type(e).__name__}: {e}"
            except (ValueError, KeyError, IndexError, TypeError) as e:
                raise GeneratorError(f"malformed chat-completions response: {e}") from None
            time.sleep(min(2 ** attempt, 30))
        raise GeneratorError(f"chat-completions request to {self.url} failed: {last}")

    def _reply(self, prompt: Prompt, payload: dict) -> Reply:
        text = payload["choices"][0]["message"]["content"] or ""
        usage = payload.get("usage") or {}
        if "prompt_tokens" in usage and "completion_tokens" in usage:
            return Reply(text, int(usage["prompt_tokens"]), int(usage["completion_tokens"]))
        return _estimated(prompt, text)
