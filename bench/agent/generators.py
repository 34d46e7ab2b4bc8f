"""Generators: whatever turns a prompt into a reply. Three kinds, one interface (`generate(prompt) -> Reply`).

- CommandGenerator: any program; it reads the prompt as JSON on stdin (Prompt.as_json: messages, workload, method,
  kind, seed, chain, turn, feedback, history; Autocomp adds phase, iteration, slot, parent, plan_index, ...) and
  prints the model's reply on stdout.
- OpenAIGenerator: an OpenAI-compatible chat-completions endpoint (httpx, retries by tenacity). The key is read from
  the environment variable the user names, sent only in the Authorization header, and written nowhere.
- TemplateSearchGenerator (bench.agent.template_search): no model; deterministic search over our Pallas kernels.

What is published about a generator is its `name`: its kind only (the model is submission.yaml's model.name).
Endpoint URLs and commands may name private hosts, paths or keys, so they live only in `fingerprint`, a hash the
run's journal (under build/) keeps to refuse resuming a run with another generator.

Token counts come from the endpoint's `usage` when it reports them; otherwise they are estimated as characters / 4
(`Reply.estimated`), which the run's token budget and the trajectory use alike.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import tenacity

from bench.agent.prompts import Prompt


@dataclass(frozen=True)
class Reply:
    text: str
    tokens_in: int
    tokens_out: int
    estimated: bool = False


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def fingerprint(*parts: str) -> str:
    """A short hash naming a generator's configuration without revealing it (URL, command, model)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


class GeneratorError(RuntimeError):
    """The generator could not produce a reply (the run stops; what is journaled stays, a rerun resumes)."""


class Generator(Protocol):
    name: str  # published (submission.yaml's agent_framework): the generator's kind, never a URL or a command
    fingerprint: str  # not published: changes when the endpoint, model or command changes (resume check)

    def generate(self, prompt: Prompt) -> Reply: ...


def _estimated(prompt: Prompt, text: str) -> Reply:
    return Reply(text, estimate_tokens(prompt.system) + estimate_tokens(prompt.user), estimate_tokens(text), True)


class CommandGenerator:
    """`sh -c COMMAND` per prompt; stdin: the prompt as JSON; stdout: the reply. A non-zero exit is an error."""

    name = "command"

    def __init__(self, command: str, timeout_s: float = 600.0) -> None:
        self.command, self.timeout_s = command, timeout_s
        self.fingerprint = fingerprint("command", command)

    def generate(self, prompt: Prompt) -> Reply:
        try:
            proc = subprocess.run(
                ["sh", "-c", self.command],
                input=json.dumps(prompt.as_json()),
                text=True,
                capture_output=True,
                timeout=self.timeout_s,
            )
        except subprocess.TimeoutExpired:
            raise GeneratorError(f"generator command timed out after {self.timeout_s} s") from None
        if proc.returncode != 0:
            raise GeneratorError(f"generator command exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
        return _estimated(prompt, proc.stdout)


#: HTTP statuses worth another try: rate limiting and the server's transient failures. Every other 4xx is the
#: request's fault (bad key, unknown model, conflict, payload too large): retrying cannot help.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
#: The longest Retry-After we honour; a server asking for longer gets this and, if still unavailable, stops the run.
MAX_RETRY_AFTER_S = 120.0


class _Retryable(Exception):
    """A failed request that may succeed when sent again (RETRY_STATUS, or the connection failed)."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or an HTTP date), None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class OpenAIGenerator:
    """POST {base_url}/chat/completions with {model, messages, seed[, temperature, max_tokens]}.

    Retries (tenacity): connection failures, timeouts and RETRY_STATUS, at most `retries` more times, waiting what
    the server's Retry-After asks (capped at MAX_RETRY_AFTER_S) or else a jittered exponential backoff (so parallel
    chains do not retry in step). Any other HTTP error stops the run at once with the server's message."""

    name = "openai-compatible"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout_s: float = 600.0,
        retries: int = 4,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model, self.api_key_env = model, api_key_env
        self.temperature, self.max_tokens, self.timeout_s, self.retries = temperature, max_tokens, timeout_s, retries
        self.fingerprint = fingerprint("openai", self.base_url, model)
        self._backoff = tenacity.wait_random_exponential(multiplier=backoff_s, max=max_backoff_s)
        self._sleep = sleep  # tests record the waits instead of sleeping them

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise GeneratorError(f"environment variable {self.api_key_env} (the API key) is not set")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _body(self, prompt: Prompt) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": prompt.messages}
        temperature = self.temperature if self.temperature is not None else prompt.temperature
        if temperature is not None:  # the user's, else the prompt kind's (Autocomp: 1 plan/implement/menu, 0 score)
            body["temperature"] = temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        # a per-call seed: providers that honour it make a rerun of the same call reproducible
        body["seed"] = prompt.seed
        return body

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after_s", None)
        return min(after, MAX_RETRY_AFTER_S) if after is not None else self._backoff(state)

    def _post(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        try:  # a client per request: one request per sample, and nothing to close when a run ends
            with httpx.Client(base_url=self.base_url, timeout=self.timeout_s) as client:
                resp = client.post("/chat/completions", json=body, headers=headers)
        except httpx.TransportError as e:  # connect error, timeout, reset: the endpoint may come back
            raise _Retryable(f"{type(e).__name__}: {e}") from None
        if resp.status_code in RETRY_STATUS:
            raise _Retryable(
                f"HTTP {resp.status_code}: {resp.text[:300]}", retry_after_s(resp.headers.get("Retry-After"))
            )
        if resp.status_code >= 400:
            raise GeneratorError(f"chat-completions request refused: HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            return resp.json()
        except ValueError as e:
            raise GeneratorError(f"malformed chat-completions response (not JSON): {e}") from None

    def generate(self, prompt: Prompt) -> Reply:
        body, headers = self._body(prompt), self._headers()
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Retryable),
            wait=self._wait,
            stop=tenacity.stop_after_attempt(self.retries + 1),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            payload = retrying(self._post, body, headers)
        except _Retryable as e:
            raise GeneratorError(f"chat-completions request failed after {self.retries + 1} attempts: {e}") from None
        try:
            return self._reply(prompt, payload)
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise GeneratorError(f"malformed chat-completions response: {type(e).__name__}: {e}") from None

    def _reply(self, prompt: Prompt, payload: dict) -> Reply:
        text = payload["choices"][0]["message"]["content"] or ""
        if not isinstance(text, str):
            raise TypeError("choices[0].message.content is not a string")
        usage = payload.get("usage") or {}
        if "prompt_tokens" in usage and "completion_tokens" in usage:
            return Reply(text, int(usage["prompt_tokens"]), int(usage["completion_tokens"]))
        return _estimated(prompt, text)
