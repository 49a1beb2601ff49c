"""Listeners: one module per Slack surface (slash commands, actions, events, the fix modal),
each with a `register(app, services)`. A listener acks, parses, calls a use case and responds;
it never touches SQL.

May import what `bot.slack` may import, and `bot.slack.prdigest`; never `bot.slack.app`.
"""
