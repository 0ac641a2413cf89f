"""Environments: what an agent can see and do inside a profile (file tools, the HippoCamp terminal)."""

from hippocamp.envs.base import Environment, LogsEnvironment, Observation
from hippocamp.envs.bounded import TerminalLimits
from hippocamp.envs.files import FilesEnv, parse_locator_text, terminal_backend
from hippocamp.envs.jail import JailLimits, JailTerminal, jail_support
from hippocamp.envs.sandbox import Sandbox, SandboxError
from hippocamp.envs.terminal import Terminal, tool_schema

__all__ = [
    "Environment",
    "FilesEnv",
    "JailLimits",
    "JailTerminal",
    "LogsEnvironment",
    "Observation",
    "Sandbox",
    "SandboxError",
    "Terminal",
    "TerminalLimits",
    "jail_support",
    "parse_locator_text",
    "terminal_backend",
    "tool_schema",
]
