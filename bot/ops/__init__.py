"""Operations: `prdigest doctor`'s checks, logging set-up (text or JSON lines, the run id of a
digest run), and the Prometheus implementation of `bot.metrics.Metrics` behind /metrics.

May import every area beneath the CLI (doctor checks them all); imported only by the CLI,
except `ops.logs` (any area may log in context) and `ops.prometheus` as a type in the server.
"""
