"""Notes read by the team's own model server, beside the local classifier.

The local classifier reads every note; a `ModelReader` then asks an OpenAI-compatible
server (`PRDIGEST_LLM_URL`, e.g. `vllm serve`) for the notes it should read: those the
classifier is unsure of or that name more than one group (`PRDIGEST_LLM_READS=unsure`),
or all of them. One `chat.completions` request per note, with a JSON schema for the answer.

Trust nothing: an answer that is not JSON, lacks a field or names an unknown role or
verdict leaves that note with its local reading. A valid answer is stored under the hash
of title, paragraph, model and prompt version, so an unchanged note is never asked again.

Never in the way: notes are read concurrently (`PRDIGEST_LLM_CONCURRENCY`), each within
`PRDIGEST_LLM_TIMEOUT`, without retries; the first sign that the server is refused, slow,
failing or talking nonsense stops asking for the rest of the run (`finish` gives the one
line to show), and the notes keep the local reading. The `openai` client (the `llm`
extra) is imported only when a request is made.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from bot.classify.taxonomy import Taxonomy
from bot.config import Settings
from bot.domain import Classification, Confidence, Note, NoteFix, Verdict
from bot.metrics import Metrics, NullMetrics
from bot.store import Store

if TYPE_CHECKING:
    from openai import OpenAI

log = logging.getLogger(__name__)

# Bump when the prompt or the schema changes: every cached reading is then asked again.
PROMPT_VERSION = "1"
SETTING = "PRDIGEST_LLM_URL"
PLACEHOLDER_KEY = "EMPTY"  # what vLLM's own examples send when the server wants no key
EXAMPLES_MAX = 8  # editor fixes shown to the model as examples
EXAMPLE_EXCERPT = 200  # characters of a fixed note's paragraph in an example
REASON_MAX = 300
KEYWORDS_SHOWN = 10  # a role's strongest keywords describe it in the prompt
AUDIENCE_SHOWN = 4
# Answers in a row that are not a valid reading before the server counts as talking
# nonsense (one odd answer costs only its note).
INVALID_TRIP = 3
READ_BATCH = 1000
CLASSIFIER = "classifier"

VERDICT_MEANINGS = {
    Verdict.DEEP: "精读, read it closely and in full; said as 必读, 逐行看, worth a careful read",
    Verdict.SKIM: "快速浏览, a quick look, one part of it, or knowing what changed is enough; "
    "said as 翻一翻, 了解大意, the summary is all you need",
    Verdict.SKIP: "可略过, no need to read it; said as 不看也无妨, safe to skip, "
    "nothing to see here",
}


@dataclass(frozen=True)
class LlmConfig:
    """The model server's settings; `from_settings` is None when no server is set."""

    url: str
    model: str
    api_key: str | None = None
    reads: str = "unsure"
    timeout: float = 30.0
    concurrency: int = 4

    @classmethod
    def from_settings(cls, settings: Settings) -> LlmConfig | None:
        if settings.llm_url is None or settings.llm_model is None:
            return None
        key = settings.llm_api_key
        return cls(
            url=settings.llm_url,
            model=settings.llm_model,
            api_key=key.get_secret_value() if key is not None else None,
            reads=settings.llm_reads,
            timeout=settings.llm_timeout,
            concurrency=settings.llm_concurrency,
        )

    @property
    def read_by(self) -> str:
        return f"llm:{self.model}"


def make_client(config: LlmConfig, timeout: float | None = None) -> OpenAI:
    """The official client; no retries: a failure stops the run's requests instead."""
    from openai import OpenAI

    return OpenAI(
        base_url=config.url,
        api_key=config.api_key or PLACEHOLDER_KEY,
        timeout=timeout or config.timeout,
        max_retries=0,
    )


# -- the prompt ---------------------------------------------------------------------------


def prompt_version(taxonomy: Taxonomy) -> str:
    """PROMPT_VERSION and the taxonomy the prompt shows: a new roles file asks again."""
    shown = [
        (r.slug, r.name_zh, r.name_en, r.aliases, r.audience, sorted(r.keywords.items()))
        for r in taxonomy.roles
    ]
    digest = hashlib.sha256(repr(shown).encode("utf-8")).hexdigest()[:12]
    return f"{PROMPT_VERSION}:{digest}"


def reading_key(title: str, paragraph: str, model: str, version: str) -> str:
    """What a stored reading is valid for: this title, paragraph, model and prompt."""
    raw = "\x1f".join((title, paragraph.strip(), model, version))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Example:
    """An editor's fix shown to the model: the note's title, an excerpt, the right answer."""

    title: str
    excerpt: str
    roles: tuple[str, ...]
    verdict: Verdict


def examples_from_fixes(fixed: Iterable[tuple[Note, NoteFix]]) -> list[Example]:
    """The newest fixes as examples (the note's stored verdict when the fix kept it)."""
    found: list[Example] = []
    for note, fix in fixed:
        text = " ".join(note.paragraph.split())
        excerpt = text if len(text) <= EXAMPLE_EXCERPT else text[: EXAMPLE_EXCERPT - 1] + "…"
        roles = (fix.primary_role, *(r for r in fix.roles if r != fix.primary_role))
        found.append(Example(note.title, excerpt, roles, fix.verdict or note.verdict))
    return found[:EXAMPLES_MAX]


def _role_lines(taxonomy: Taxonomy) -> list[str]:
    lines = []
    for role in taxonomy.roles:
        strongest = sorted(role.keywords.items(), key=lambda kv: (-kv[1], kv[0]))
        about = ", ".join(term.rstrip("*") for term, _ in strongest[:KEYWORDS_SHOWN])
        line = f"- {role.slug}: {role.name_zh} / {role.name_en}"
        if role.aliases:
            line += f"; also called {', '.join(role.aliases)}"
        if role.audience:
            line += f"; its readers are named like {', '.join(role.audience[:AUDIENCE_SHOWN])}"
        if about:
            line += f"; about {about}"
        lines.append(line)
    return lines


def system_prompt(taxonomy: Taxonomy, examples: Sequence[Example] = ()) -> str:
    """What the model is told before each note: roles, verdicts, how to read groups."""
    parts = [
        "You read short notes that engineers of an LLM inference team write about vLLM pull "
        "requests. Each note is a title and a paragraph, in Chinese or English, that says "
        "how closely to read the pull request and for whom. Read the note in the language "
        "it is written in and answer with one JSON object.",
        "",
        "Reader groups (slug: names; other names; how the note may name its readers; what "
        "they work on):",
        *_role_lines(taxonomy),
        "",
        "Verdicts:",
        *(f"- {v.value}: {meaning}" for v, meaning in VERDICT_MEANINGS.items()),
        "",
        "The answer:",
        '- "roles": slugs of the groups whose work the note is about, the one it concerns '
        "most first. Only slugs from the list above.",
        '- "verdict": what the note tells the first of those groups. A note that gives no '
        'word on reading it is "skim"; never "deep" without words that say so. A negated '
        'cue means the opposite ("不值得精读", "no need for a close read" are skip); after '
        "a contrast (但, 不过, but, though) the later statement wins.",
        '- "groups": {slug: verdict} for each group the note tells something other than '
        '"verdict". Groups are often named only by their work ("做量化的同学", "whoever owns '
        'the Dockerfile", "kernel folks", "if you maintain chat templates"): give the slug '
        "of the group whose work that is. Empty when the note speaks to one audience.",
        '- "others": what the note tells everyone else ("其余读者可略过", "everyone else can '
        'skip it", "the rest of us only need the headline"), or null when it says nothing '
        "to them.",
        '- "reason": one short sentence, in the language of the note, saying why.',
    ]
    if examples:
        parts += ["", "Notes an editor corrected; read similar notes the same way:"]
        for ex in examples:
            parts.append(
                f"- {json.dumps(ex.title, ensure_ascii=False)}: "
                f"{json.dumps(ex.excerpt, ensure_ascii=False)} -> roles "
                f"{json.dumps(list(ex.roles))}, verdict {json.dumps(ex.verdict.value)}"
            )
    return "\n".join(parts)


def note_prompt(title: str, paragraph: str) -> str:
    return f"Title: {title}\nParagraph: {paragraph.strip()}"


def answer_schema(taxonomy: Taxonomy) -> dict[str, Any]:
    """The JSON schema of an answer: roles, verdict, groups, others, reason."""
    slugs = list(taxonomy.slugs)
    verdicts = [v.value for v in Verdict]
    return {
        "type": "object",
        "properties": {
            "roles": {
                "type": "array",
                "items": {"type": "string", "enum": slugs},
                "minItems": 1,
            },
            "verdict": {"type": "string", "enum": verdicts},
            "groups": {
                "type": "object",
                "properties": {s: {"type": "string", "enum": verdicts} for s in slugs},
                "additionalProperties": False,
            },
            "others": {"anyOf": [{"type": "string", "enum": verdicts}, {"type": "null"}]},
            "reason": {"type": "string"},
        },
        "required": ["roles", "verdict", "groups", "others", "reason"],
        "additionalProperties": False,
    }


def request_body(
    config: LlmConfig, taxonomy: Taxonomy, examples: Sequence[Example], title: str, paragraph: str
) -> dict[str, Any]:
    """The keyword arguments of one `chat.completions.create` call."""
    return {
        "model": config.model,
        "messages": [
            {"role": "system", "content": system_prompt(taxonomy, examples)},
            {"role": "user", "content": note_prompt(title, paragraph)},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "note_reading", "schema": answer_schema(taxonomy)},
        },
        "temperature": 0,
    }


# -- the answer ----------------------------------------------------------------------------


class Reading(BaseModel):
    """A validated answer; validating needs the taxonomy's slugs as context."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    roles: tuple[str, ...] = Field(min_length=1)
    verdict: Verdict
    groups: dict[str, Verdict]
    others: Verdict | None
    reason: str

    @model_validator(mode="after")
    def _known_roles(self, info: ValidationInfo) -> Reading:
        slugs = (info.context or {}).get("slugs", ())
        unknown = [r for r in (*self.roles, *self.groups) if r not in slugs]
        if unknown:
            raise ValueError(f"unknown role {unknown[0]!r}")
        return self


class InvalidAnswer(ValueError):
    """An answer that is not a reading; the message says why in a few words."""


_THINKING = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_answer(content: str | None, taxonomy: Taxonomy) -> Reading:
    """The reading in a model's answer text; InvalidAnswer when there is none."""
    if not content or not content.strip():
        raise InvalidAnswer("an empty answer")
    text = _THINKING.sub("", content)
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced[1]
    try:
        data = json.loads(text)
    except ValueError:
        raise InvalidAnswer(f"an answer that is not JSON: {content.strip()[:40]!r}") from None
    return validate_reading(data, taxonomy)


def validate_reading(data: object, taxonomy: Taxonomy) -> Reading:
    try:
        reading = Reading.model_validate(data, context={"slugs": taxonomy.slugs})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "the answer"
        message = str(error["msg"]).removeprefix("Value error, ")
        raise InvalidAnswer(f"not a reading ({where}: {message})") from None
    return reading.model_copy(update={"reason": " ".join(reading.reason.split())[:REASON_MAX]})


def apply_reading(
    reading: Reading, local: Classification, taxonomy: Taxonomy, read_by: str
) -> Classification:
    """The note's classification as the model read it; the local excerpt stays (the digest
    looks the same whoever read the note)."""
    roles = tuple(dict.fromkeys(reading.roles))
    told = dict(reading.groups)
    if reading.others is not None:
        for slug in taxonomy.slugs:
            if slug not in roles and slug not in told:
                told[slug] = reading.others
    if len(told) < len(taxonomy.slugs) or all(v is reading.verdict for v in told.values()):
        # only what differs from the main verdict, unless everyone is told theirs (as the
        # classifier keeps them)
        told = {r: v for r, v in told.items() if v is not reading.verdict}
    return Classification(
        roles=roles,
        primary_role=roles[0],
        verdict=reading.verdict,
        role_verdicts=told,
        excerpt=local.excerpt,
        verdict_confidence=Confidence.HIGH,
        read_by=read_by,
    )


def unsure(local: Classification) -> bool:
    """Whether the local classifier is unsure of a note or it names more than one group."""
    groups = set(local.roles) | set(local.role_verdicts)
    return local.verdict_confidence is Confidence.LOW or len(groups) > 1


# -- reading --------------------------------------------------------------------------------


class ReadingCache(Protocol):
    """Where readings are kept (the store)."""

    def cached_readings(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]: ...

    def save_readings(self, readings: Sequence[tuple[str, str, dict[str, Any]]]) -> None: ...


class _Failure(Exception):
    """One request that failed: `outcome` for the metrics, `cause` for the log line."""

    def __init__(self, outcome: str, cause: str) -> None:
        super().__init__(cause)
        self.outcome = outcome
        self.cause = cause


@dataclass
class ReadStats:
    """What one run asked and got."""

    read: int = 0  # answered with a valid reading
    cached: int = 0  # a stored reading, no request
    invalid: int = 0  # answered, not a reading
    failed: int = 0  # no answer (refused, timeout, HTTP error)
    not_asked: int = 0  # left after the server stopped being asked
    first_invalid: str = ""

    def summary(self, read_by: str) -> str:
        kept = self.invalid + self.failed + self.not_asked
        return (
            f"{read_by}: {self.read} read, {self.cached} from earlier readings, "
            f"{kept} kept the classifier's reading"
        )


@dataclass
class ModelReader:
    """Reads notes through the model server; see the module docstring.

    With `requests` False it only applies stored readings (never a request): what
    `serve` and `post` use, so posting never waits on the model.
    """

    config: LlmConfig
    taxonomy: Taxonomy
    cache: ReadingCache
    metrics: Metrics = field(default_factory=NullMetrics)
    examples: Sequence[Example] = ()
    requests: bool = True
    stats: ReadStats = field(default_factory=ReadStats)
    stopped: str | None = None  # why the server is no longer asked in this run
    _client: OpenAI | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _invalid_run: int = 0
    _version: str = ""

    def __post_init__(self) -> None:
        self._version = prompt_version(self.taxonomy)

    @property
    def read_by(self) -> str:
        return self.config.read_by

    def wants(self, local: Classification) -> bool:
        """Whether this note should be read by the model (PRDIGEST_LLM_READS)."""
        return self.config.reads == "all" or unsure(local)

    def key(self, title: str, paragraph: str) -> str:
        return reading_key(title, paragraph, self.config.model, self._version)

    def read(self, notes: Sequence[tuple[str, str, Classification]]) -> list[Classification | None]:
        """For each (title, paragraph, local reading): the model's reading, or None where
        the note keeps its local one. Stored readings first; the rest are asked
        concurrently, and every valid answer is stored."""
        if not notes:
            return []
        keys = [self.key(title, paragraph) for title, paragraph, _ in notes]
        stored = self.cache.cached_readings(keys)
        results: list[Classification | None] = [None] * len(notes)
        missing: list[int] = []
        for i, (key, (_, _, local)) in enumerate(zip(keys, notes, strict=True)):
            if key in stored:
                try:
                    reading = validate_reading(stored[key], self.taxonomy)
                except InvalidAnswer:
                    missing.append(i)
                    continue
                self.stats.cached += 1
                results[i] = apply_reading(reading, local, self.taxonomy, self.read_by)
            else:
                missing.append(i)
        if not missing:
            return results
        if not self.requests:
            return results
        answered: list[tuple[str, str, dict[str, Any]]] = []

        def ask(i: int) -> None:
            title, paragraph, local = notes[i]
            reading = self._ask(title, paragraph)
            if reading is not None:
                answered.append((keys[i], self.config.model, reading.model_dump(mode="json")))
                results[i] = apply_reading(reading, local, self.taxonomy, self.read_by)

        workers = min(self.config.concurrency, len(missing))
        with ThreadPoolExecutor(workers, thread_name_prefix="llm-reader") as pool:
            list(pool.map(ask, missing))
        self.cache.save_readings(answered)
        return results

    def _ask(self, title: str, paragraph: str) -> Reading | None:
        """One request; None when it gives no reading (and the run stops asking when the
        server is refused, slow, failing or talking nonsense)."""
        with self._lock:
            if self.stopped is not None:
                self.stats.not_asked += 1
                return None
            if self._client is None:
                self._client = make_client(self.config)
            client = self._client
        body = request_body(self.config, self.taxonomy, self.examples, title, paragraph)
        started = time.monotonic()
        try:
            try:
                content = _complete(client, body, self.config.timeout)
            except _Failure:
                raise
            except Exception as exc:  # whatever the client meets, the note keeps its reading
                log.debug("the request to the model server failed", exc_info=True)
                cause = f"failed ({type(exc).__name__}: {_first_line(exc)})"
                raise _Failure("error", cause) from None
            reading = parse_answer(content, self.taxonomy)
        except _Failure as failure:
            self.metrics.llm_request(failure.outcome, time.monotonic() - started)
            with self._lock:
                self.stats.failed += 1
                self._stop(failure.cause)
            return None
        except InvalidAnswer as exc:
            self.metrics.llm_request("invalid", time.monotonic() - started)
            with self._lock:
                self.stats.invalid += 1
                self.stats.first_invalid = self.stats.first_invalid or str(exc)
                self._invalid_run += 1
                if self._invalid_run >= INVALID_TRIP:
                    self._stop(f"answers {self.stats.first_invalid}")
            log.debug("the model's answer for %r is not a reading: %s", title, exc)
            return None
        self.metrics.llm_request("ok", time.monotonic() - started)
        with self._lock:
            self.stats.read += 1
            self._invalid_run = 0
        return reading

    def _stop(self, cause: str) -> None:
        if self.stopped is None:
            self.stopped = cause
            log.debug("the model server stopped being asked: %s", cause)

    def finish(self) -> str | None:
        """The one line for the operator when the server failed this run (None when all
        went well), naming PRDIGEST_LLM_URL and the cause; closes the connection."""
        if self._client is not None:
            self._client.close()
            self._client = None
        where = f"the model server at {SETTING}={self.config.url}"
        if self.stopped is not None:
            return (
                f"{where} {self.stopped}: the notes of this run keep the local classifier's reading"
            )
        if self.stats.invalid:
            return (
                f"{where} gave {self.stats.invalid} answers that are not a reading (first: "
                f"{self.stats.first_invalid}): those notes keep the local classifier's reading"
            )
        return None


def _complete(client: OpenAI, body: dict[str, Any], timeout: float) -> str | None:
    """The answer text of one chat completion; _Failure when there is none."""
    import openai

    try:
        response = client.chat.completions.create(**body)
    except openai.APITimeoutError:
        raise _Failure(
            "timeout", f"gave no answer within {timeout:g}s (PRDIGEST_LLM_TIMEOUT)"
        ) from None
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise _Failure("unreachable", f"is unreachable ({_first_line(cause)})") from None
    except openai.APIStatusError as exc:
        raise _Failure(
            f"http_{exc.status_code}",
            f"answered HTTP {exc.status_code} ({_first_line(exc)[:120]})",
        ) from None
    except (openai.OpenAIError, ValueError, TypeError, AttributeError) as exc:
        raise _Failure("nonsense", f"talks nonsense ({_first_line(exc)[:80]})") from None
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        raise _Failure("nonsense", "talks nonsense (no choices in its answer)") from None
    if content is not None and not isinstance(content, str):
        raise _Failure("nonsense", "talks nonsense (an answer that is not text)")
    return content


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- the use cases ----------------------------------------------------------------------------


def build_reader(
    settings: Settings,
    store: Store,
    taxonomy: Taxonomy,
    metrics: Metrics | None = None,
    *,
    requests: bool = True,
) -> ModelReader | None:
    """The reader the settings ask for (None without PRDIGEST_LLM_URL), with the newest
    editor fixes as its examples."""
    config = LlmConfig.from_settings(settings)
    if config is None:
        return None
    examples = examples_from_fixes(store.recent_fixes(EXAMPLES_MAX)) if requests else ()
    return ModelReader(
        config, taxonomy, store, metrics or NullMetrics(), examples=examples, requests=requests
    )


def read_stored_notes(store: Store, taxonomy: Taxonomy, reader: ModelReader) -> ReadStats:
    """Have the model read every stored note it should and has not read as it is now (new
    or revised notes, notes stored while the server was away or by another model). An
    editor's fix still wins over the reading."""
    from bot.classify import build_classifier

    last = 0
    while batch := store.notes_after(last, READ_BATCH):
        last = batch[-1].id
        waiting = [n for n in batch if n.read_by != reader.read_by]
        if not waiting:
            continue
        fixes = store.fixes_for(n.id for n in waiting)
        wanted: list[tuple[Note, Classification]] = []
        chosen: list[tuple[Note, Classification]] = []  # what each note is read as now
        for note in waiting:
            if note.read_by == CLASSIFIER and note.id not in fixes:
                local = _stored_classification(note)  # the classifier's own, as stored
            else:
                local = build_classifier(taxonomy).classify(note.title, note.paragraph)
            if reader.wants(local):
                wanted.append((note, local))
            elif note.read_by != CLASSIFIER:
                chosen.append((note, local))  # read by another model; this one need not
        readings = reader.read([(n.title, n.paragraph, local) for n, local in wanted])
        chosen += [(n, r) for (n, _), r in zip(wanted, readings, strict=True) if r is not None]
        store.reclassify_batch(
            [
                (n.id, fixes[n.id].apply(c, taxonomy.slugs) if n.id in fixes else c)
                for n, c in chosen
            ]
        )
        if reader.stopped is not None:
            break
    return reader.stats


def _stored_classification(note: Note) -> Classification:
    return Classification(
        roles=note.roles,
        primary_role=note.primary_role,
        verdict=note.verdict,
        role_verdicts=note.role_verdicts,
        excerpt=note.excerpt,
        verdict_confidence=note.verdict_confidence,
        read_by=note.read_by,
    )
