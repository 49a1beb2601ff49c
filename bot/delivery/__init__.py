"""Delivery: the weekly job and everything it sends. Scheduling (a tick a minute), building
the week's messages, posting them to channels with pacing, each reader's DM at their own day
and time within their reading budget (`reader_dms`, with their Slack profile from
`profiles`) sent by the DM fan-out, and editing posted messages when a note's verdict or
roles change (revisions).

May import: `bot.domain`, `bot.config`, `bot.metrics`, `bot.services`, `bot.notes`,
`bot.readers`, `bot.store`, `bot.render`, `bot.i18n`, the Web API client `bot.slack.client` and
`bot.ops.logs`; never the Bolt app, listeners or server, the rest of ops, or the CLI.
"""
