"""prdigest: weekly, role-specific reading lists of vLLM pull-request notes, in Slack."""

__version__ = "0.1.0"
