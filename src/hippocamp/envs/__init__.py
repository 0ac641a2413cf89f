"""Environments: what an agent can do inside a profile (the sandbox and the HippoCamp terminal)."""

from hippocamp.envs.sandbox import Sandbox, SandboxError
from hippocamp.envs.terminal import Observation, Terminal, tool_schema

__all__ = ["Observation", "Sandbox", "SandboxError", "Terminal", "tool_schema"]
