"""The `prdigest` command line (`bot.cli.app:main`): one module per command group, built on
`runtime` (consoles, one-line errors, settings and services) and `help` (plain help text).

The one place that reads settings and builds the services, the Slack client, the Bolt app and
the scheduler. May import every area of the project; nothing imports the CLI.
"""
