"""The fixed values of the test environment: the fake Slack's token, the digest channel and
the PostgreSQL server the shared fixtures make their databases on."""

from __future__ import annotations

import os

PG_ADMIN_URL = os.environ.get(
    "PRDIGEST_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
SLACK_TOKEN = "xoxb-test"
DIGEST_CHANNEL = "C0DIGEST"
