"""Render: Block Kit messages, views and modals, the mrkdwn escaping rules, and the terminal's
rich renderables. Functions that return dicts or renderables: no I/O, no Slack client.

May import: `bot.domain`, the message catalogues (`bot.i18n`) and the classifier's taxonomy
(`bot.taxonomy`); never notes, store,
readers, delivery, Slack, services, ops or the CLI.
"""
