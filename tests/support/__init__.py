"""What the tests share: the fakes of Slack and of a model server, request signing, the
`prdigest` process, a PostgreSQL cluster of its own, and the notes and settings they use."""
