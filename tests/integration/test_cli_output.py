"""What the human output of the CLI tells the next command: note ids (what `fix` takes),
each note's role and only its other roles under "also:", what a lookup matched, and a dry
run as a person reads it in Slack."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bot.classify.taxonomy import load_taxonomy
from tests.support.cli import json_lines, run

HOSTILE_TITLE = "Fix a < b && c > d for <!channel> (#4242)"


def note_lines(out: str) -> dict[int, str]:
    """Note id -> the line that starts with it (#12), joined again where the terminal wrapped
    it (its excerpt, indented, follows), without whitespace (a wrap may fall anywhere)."""
    found: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in out.splitlines():
        match = re.match(r"#(\d+) ", line)
        if match:
            current = found.setdefault(int(match[1]), [])
        elif line.startswith("    ") or not line.strip():
            current = None  # the excerpt
        if current is not None:
            current.append(line)
    return {k: squashed("".join(v)) for k, v in found.items()}


def squashed(text: str) -> str:
    return "".join(text.split())


def test_notes_shows_each_id_its_role_and_only_its_other_roles(env: Path) -> None:
    run("ingest")
    notes = json_lines(run("notes", "--json", "--limit", "0")[1])
    code, out, _ = run("notes", "--limit", "0")
    assert code == 0
    lines = note_lines(out)
    assert sorted(lines) == sorted(int(str(n["id"])) for n in notes)
    several = 0
    for note in notes:
        line = lines[int(str(note["id"]))]
        title = squashed(str(note["title"]))
        primary, roles = str(note["primary_role"]), [str(r) for r in note["roles"]]  # type: ignore[attr-defined]
        others = [r for r in roles if r != primary]
        also = f"also:{','.join(others)}" if others else ""
        role = rf"{re.escape(title)}(\(lowconfidence\))?{re.escape(primary + also)}readby"
        assert re.search(role, line), line
        several += bool(others)
        assert ("also:" in line) == bool(others), line
    assert several, "some notes have more than one role"
    # In a role's list the role itself is the context: "also:" names the rest.
    _, out, _ = run("notes", "--role", "kernels", "--limit", "0")
    for line in note_lines(out).values():
        assert not re.search(r"also:[a-z,-]*kernels", line), line


def test_the_ids_shown_are_the_ones_fix_takes(env: Path) -> None:
    run("ingest")
    _, out, _ = run("lookup", "moe", "--limit", "1")
    (note_id,) = note_lines(out)
    code, out, err = run("fix", f"#{note_id}", "--roles", "kernels")
    assert code == 0, err
    assert f"fixed note #{note_id}" in out
    code, _, err = run("fix", "999999", "--roles", "kernels")
    assert code == 2
    assert "no note with id 999999: `prdigest notes` and `prdigest lookup` show each" in err
    assert "--json" not in err


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("moe", "role moe-quant · MoE 与量化 / MoE & quantization (matched alias `moe`)"),
        ("kernels", "role kernels · 内核与算子 / Kernels"),
        ("KV cache", "role kv-cache · KV 缓存 / KV cache (matched its name)"),
        ("fp8 marlin", "free text `fp8 marlin`"),
    ],
)
def test_lookup_says_what_it_matched_and_shows_ids(env: Path, query: str, said: str) -> None:
    run("ingest")
    code, out, _ = run("lookup", *query.split())
    assert code == 0
    assert squashed(out).startswith(squashed(said) + "#")
    found = json_lines(run("lookup", *query.split(), "--json")[1])
    assert found and sorted(note_lines(out)) == sorted(int(str(n["id"])) for n in found)


def test_a_lookup_without_a_hit_says_so_and_names_the_closest_roles(env: Path) -> None:
    run("ingest")
    code, out, _ = run("lookup", "kernal", "zzqqxx")
    assert code == 0
    taxonomy = load_taxonomy(None)
    label = taxonomy.get("kernels").label
    assert squashed(out) == squashed(
        "No note matches free text `kernal zzqqxx`. "
        f"Closest roles: kernels ({label}); e.g. `prdigest lookup kernels`"
    )
    code, out, _ = run("lookup", "quantisatoin")
    assert "Closest roles: moe-quant" in out
    # No role is named like the whole query: the closest to each of its words.
    code, out, _ = run("lookup", "zzqqxx", "kernal", "wwyyvv")
    assert code == 0 and "Closestroles:kernels(" in squashed(out)
    code, out, _ = run("lookup", "zzqqxx")
    assert squashed(out) == squashed(
        "No note matches free text `zzqqxx`. No role has a similar name: `prdigest roles` "
        "lists them."
    )


def test_post_dry_run_reads_as_slack_shows_it_and_json_keeps_block_kit(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (env / "hostile.txt").write_text(
        f"our-team/vllm\n\n{HOSTILE_TITLE}\n\n值得精读，做 MoE 量化的工程师 & 内核作者。\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("PRDIGEST_CHANNEL", "C0DIGEST")
    assert run("ingest")[0] == 0
    code, out, _ = run("post", "--dry-run")
    assert code == 0
    title = HOSTILE_TITLE.removesuffix(" (#4242)")
    shown = squashed(out)
    assert squashed(f"{title} (https://github.com/our-team/vllm/pull/4242)") in shown
    assert squashed("MoE 与量化 / MoE & quantization") in shown
    assert squashed("做 MoE 量化的工程师 & 内核作者") in shown
    for raw in ("&amp;", "&lt;", "&gt;", "*MoE", "<https://", ":large_green_circle:"):
        assert raw not in out, raw
    code, out, _ = run("post", "--dry-run", "--json")
    assert code == 0
    payloads = [json.loads(line) for line in out.splitlines()]
    raw = json.dumps(payloads, ensure_ascii=False)
    assert "a &lt; b &amp;&amp; c &gt; d for &lt;!channel&gt;" in raw
    assert "<https://github.com/our-team/vllm/pull/4242|" in raw
    assert "*MoE 与量化 / MoE &amp; quantization*" in raw
