"""Readers: what each reader asked for and what they get. Subscriptions, watches (saved
searches), pauses, reading lists within a reading budget, their own DM day, time and time
zone (`schedule`, `dm_settings`), and corrections (a reader's fix of a note's verdict or
roles, and reclassifying stored notes).

May import: `bot.domain`, `bot.config`, `bot.services`, `bot.notes`, `bot.store`, `bot.render`,
`bot.i18n` and the classifier; never delivery, Slack, ops or the CLI.
"""
