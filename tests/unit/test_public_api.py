"""bot/ uses Bolt and slack_sdk through their public API only.

A private name (`_x`) or an internal module is a promise nobody made: a minor release of
either library may change it, and pyproject allows every minor release below 2 and 4. The
source is read with `ast`: imports of Slack's modules, and attributes or `getattr` names
with a leading underscore in every module that imports one of them.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import bot

LIBRARIES = ("slack_bolt", "slack_sdk")
# The modules bot/ may import from, each public: exported by the package's `__init__` and
# shown in the libraries' documentation (docs.slack.dev/tools/bolt-python and
# /python-slack-sdk, "Reference" and the guides). Before adding one, check it is both.
PUBLIC_MODULES = frozenset(
    {
        "slack_bolt",  # App, Ack, Args, BoltContext, BoltRequest, BoltResponse, Respond
        "slack_bolt.adapter.socket_mode",  # SocketModeHandler ("Using Socket Mode")
        "slack_bolt.adapter.wsgi",  # SlackRequestHandler (the WSGI adapter)
        "slack_bolt.authorization",  # AuthorizeResult ("Authorization": custom authorize)
        "slack_bolt.middleware",  # Middleware (class-based global middleware)
        "slack_sdk",  # WebClient
        "slack_sdk.errors",
        "slack_sdk.http_retry",  # RetryHandler and its types ("Retry handlers")
        "slack_sdk.http_retry.builtin_handlers",  # the guide imports the built-in ones here
        "slack_sdk.models.attachments",
        "slack_sdk.models.blocks",
        "slack_sdk.signature",  # SignatureVerifier ("Verifying requests from Slack")
        "slack_sdk.web",  # SlackResponse
        "slack_sdk.webhook",  # WebhookClient, WebhookResponse (response_url replies)
    }
)
SOURCE = Path(bot.__file__).parent


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _slack(module: str) -> bool:
    return module.split(".", 1)[0] in LIBRARIES


def private_uses(source: str, where: str = "<source>") -> list[str]:
    """Every private or unlisted use of Bolt or slack_sdk in `source`, as "where:line: what"."""
    tree = ast.parse(source)
    found: list[str] = []
    imports_slack = False
    for node in ast.walk(tree):
        modules: list[tuple[str, list[str]]] = []
        if isinstance(node, ast.Import):
            modules = [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [(node.module, [alias.name for alias in node.names])]
        for module, names in modules:
            if not _slack(module):
                continue
            imports_slack = True
            if any(_private(part) for part in module.split(".")):
                found.append(f"{where}:{node.lineno}: private module {module}")
            elif module not in PUBLIC_MODULES:
                found.append(f"{where}:{node.lineno}: {module} is not a public module")
            found += [
                f"{where}:{node.lineno}: private name {module}.{name}"
                for name in names
                if _private(name)
            ]
    if not imports_slack:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner not in ("self", "cls"):
                found.append(f"{where}:{node.lineno}: private attribute .{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append(f"{where}:{node.lineno}: private attribute {node.args[1].value!r}")
    return found


def slack_imports(source: str) -> set[tuple[str, str]]:
    """(module, name) for every name imported from Slack's libraries."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and _slack(node.module):
            found |= {(node.module, alias.name) for alias in node.names}
    return found


# ---- the project holds to it ----------------------------------------------------------------


def test_bot_uses_no_private_name_of_bolt_or_slack_sdk() -> None:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        found += private_uses(path.read_text(), str(path.relative_to(SOURCE.parent)))
    assert found == []


def test_every_public_module_listed_is_used() -> None:
    """The list says what bot/ relies on, no more."""
    used = set()
    for path in SOURCE.rglob("*.py"):
        used |= {module for module, _ in slack_imports(path.read_text())}
    assert sorted(PUBLIC_MODULES - used) == []


def test_listeners_never_see_the_app() -> None:
    """Listeners register through `AckFirst` (in `acking`, which holds the app for them), so
    none can be registered to run whole before its acknowledgement."""
    for path in sorted((SOURCE / "slack" / "listeners").glob("*.py")):
        if path.stem == "acking":
            continue
        assert ("slack_bolt", "App") not in slack_imports(path.read_text()), path.name


# ---- the check catches what it is for ---------------------------------------------------------


def _uses(source: str) -> list[str]:
    return private_uses(textwrap.dedent(source))


def test_check_catches_private_functions_modules_and_attributes() -> None:
    assert _uses(
        """
        from slack_bolt.context.respond.internals import _build_message
        from slack_bolt.kwargs_injection import build_required_kwargs
        from slack_bolt.util.utils import get_arg_names_of_callable
        import slack_sdk._private
        from slack_bolt import App

        def listeners(app: App) -> None:
            for listener in app._listeners:
                getattr(listener, "_hidden")
        """
    ) == [
        "<source>:2: slack_bolt.context.respond.internals is not a public module",
        "<source>:2: private name slack_bolt.context.respond.internals._build_message",
        "<source>:3: slack_bolt.kwargs_injection is not a public module",
        "<source>:4: slack_bolt.util.utils is not a public module",
        "<source>:5: private module slack_sdk._private",
        "<source>:9: private attribute ._listeners",
        "<source>:10: private attribute '_hidden'",
    ]


def test_check_passes_public_use_and_leaves_other_modules_alone() -> None:
    assert (
        _uses(
            """
        from slack_bolt import App, Args
        from slack_sdk.webhook import WebhookClient

        class Replies:
            def __init__(self, app: App) -> None:
                self._app = app
                self.__name__ = "replies"

            def send(self, url: str) -> None:
                WebhookClient(url).send_dict({"text": self._app.name})
        """
        )
        == []
    )
    assert _uses("from collections import namedtuple\nrow._replace(a=1)\n") == []
