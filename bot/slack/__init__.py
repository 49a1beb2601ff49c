"""Slack: the Bolt app and its listeners, the Web API client, the HTTP server that serves
Slack's requests with /healthz and /metrics, the health link to Slack (`slack_link`), and the
/prdigest command's grammar and answers (`prdigest`).

May import: `bot.domain`, `bot.config`, `bot.metrics`, `bot.services`, `bot.notes`,
`bot.readers`, `bot.delivery`, `bot.store`, `bot.render`, `bot.i18n` and the classifier;
never the CLI.
`bot.ops` only for the types the server is handed (`ops.prometheus` under TYPE_CHECKING).
"""
