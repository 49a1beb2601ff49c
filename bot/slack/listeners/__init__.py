"""Listeners: one module per Slack surface (slash commands, actions, events, the fix modal),
each with a `register(listeners, services)` that registers through `acking.AckFirst` (never
the app itself). A listener acks, parses, calls a use case and responds; it never touches SQL.

May import what `bot.slack` may import, and `bot.slack.prdigest`; never `bot.slack.app`.
"""
