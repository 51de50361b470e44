"""Skills and provider facts as items of the journey, read through their owners."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from engine.journey.model import ItemLayer
from engine.memory.operations import preview
from engine.plugins.base import MemoryProvider, ProviderFact
from engine.skills.manage import HISTORY_FILE as SKILLS_HISTORY
from engine.skills.manage import LOCK_FILE as SKILLS_LOCK
from engine.skills.store import SKILL_FILE

if TYPE_CHECKING:
    from engine.config import Config
    from engine.home import Home
    from engine.skills.manage import SkillChange

log = logging.getLogger(__name__)

# -- skills and provider facts ----------------------------------------------------------------

# Noted on a fact whose earlier texts are unknown: the store keeps only the latest one.
FACT_TEXT_NOTE = "The fact store keeps only a fact's latest text; earlier texts are not recorded."
# A SKILL.md text the history left out (too long to keep): the marker is also what is shown.
_UNKNOWN = "(not recorded: the text was too long to keep in the skills' history)"


class DiskSkill(BaseModel):
    """A skill folder as it is now."""

    ref: str  # category/name or name
    name: str
    text: str  # SKILL.md
    mtime: float
    title: str = ""
    files: list[str] = Field(default_factory=list)
    trust_level: str | None = None
    uses: int | None = None
    problem: str | None = None  # why it does not load, for a broken one


# A provider's fact as the journey reads it (the providers' journey hook).
FactRow = ProviderFact
# The provider whose fact ids are shown bare (``fact:12``); any other's carry its name.
LOCAL_FACTS = "holographic"


def journey_providers(home: Home, config: Config | None = None) -> list[MemoryProvider]:
    """The providers whose facts the journey shows: the local fact store, and the provider
    ``memory.provider`` names when that is another one. One that cannot be loaded is left
    out (the agent says why when it starts)."""
    from engine.config import load_config
    from engine.plugins.holographic.provider import HolographicProvider

    config = config if config is not None else load_config(home)
    providers: list[MemoryProvider] = [HolographicProvider(home, config)]
    name = config.memory.provider
    if name and name != LOCAL_FACTS:
        from engine.plugins.manager import load_provider

        try:
            providers.append(load_provider(name, home, config))
        except Exception as exc:
            log.debug("memory provider %s not shown in the journey: %s", name, exc)
    return providers


@dataclass
class ItemChange:
    """One change of a skill or a fact, ready to replay: from the skills' history, from the
    skill folders as they are (a skill made or edited outside Cairn), or the fact store."""

    at: float
    layer: ItemLayer
    subject: str
    action: str
    text: str | None  # the item's text after it; None: unchanged (a supporting file changed)
    summary: str
    gone: bool = False  # it no longer exists after this change
    before: str | None = None  # the changed file's text before and after, for the diff
    after: str | None = None
    file: str | None = None  # a supporting file, when that is what changed
    origin: str = "foreground"
    session_id: str | None = None
    pending_id: str | None = None
    note: str | None = None


class HomeLayers:
    """Reads a home's skills (their change history and the folders as they are) and its
    provider facts (the Holographic fact store, read-only) for the journey."""

    def __init__(
        self, home: Home | None, providers: Sequence[MemoryProvider] | None = None
    ) -> None:
        self.home = home  # None: a subclass supplies the data (tests, benchmarks)
        self._providers = list(providers) if providers is not None else None
        self.errors: list[str] = []

    @property
    def providers(self) -> list[MemoryProvider]:
        if self._providers is None:
            self._providers = journey_providers(self.home) if self.home is not None else []
        return self._providers

    @property
    def skills_dir(self) -> Path:
        assert self.home is not None
        return self.home.skills_dir

    @contextlib.contextmanager
    def skills_lock(self) -> Iterator[None]:
        """The skills' write lock, so a change is never seen on disk before its history line
        (the writer appends it under the same lock). Not created where there are no skills."""
        if not self.skills_dir.is_dir():
            yield
            return
        from engine.fsutil import locked

        with locked(self.skills_dir / SKILLS_LOCK):
            yield

    def skill_records(
        self, offset: int, inode: int | None
    ) -> tuple[list[SkillChange], int, int] | None:
        """Records of the skills' history from byte ``offset``, the offset after the last
        whole line and the file's inode; None when the file is not the one read before."""
        from engine.skills.manage import SkillChange

        path = self.skills_dir / SKILLS_HISTORY
        try:
            with path.open("rb") as handle:
                info = os.fstat(handle.fileno())
                if offset and (info.st_ino != inode or info.st_size < offset):
                    return None
                handle.seek(offset)
                data = handle.read()
        except FileNotFoundError:
            return ([], 0, 0) if not offset else None
        # A line without its newline is still being written (or was cut by a crash).
        whole = data[: data.rfind(b"\n") + 1]
        records = []
        for line in whole.splitlines():
            if not line.strip():
                continue
            try:
                records.append(SkillChange.model_validate_json(line))
            except ValueError:
                continue  # a damaged line tells nothing reliable; the rest still does
        return records, offset + len(whole), info.st_ino

    def skills_now(self) -> dict[str, DiskSkill]:
        """Every skill folder, by category/name; broken ones too (they are still there)."""
        if not self.skills_dir.is_dir():
            return {}
        from engine.skills.guard import TrustBook
        from engine.skills.store import list_files, load_catalog
        from engine.skills.usage import UsageBook

        assert self.home is not None  # checked by skills_dir above
        catalog = load_catalog(self.home)
        levels = TrustBook(self.skills_dir).levels()
        uses = UsageBook(self.skills_dir).counts()
        found: dict[str, DiskSkill] = {}
        for skill in catalog.skills:
            read = _read_skill_md(skill.skill_md)
            if read is None:
                continue
            text, mtime = read
            found[skill.ref] = DiskSkill(
                ref=skill.ref,
                name=skill.name,
                text=text,
                mtime=mtime,
                title=skill.meta.one_line,
                files=[f for f, _size in list_files(skill)],
                trust_level=levels.get(skill.name, "community"),
                uses=uses[skill.name].uses if skill.name in uses else 0,
            )
        for problem in catalog.problems:
            ref = str(Path(problem.path).parent.as_posix())
            read = _read_skill_md(self.skills_dir / problem.path)
            if read is None or ref in found or ref in ("", "."):
                continue
            text, mtime = read
            found[ref] = DiskSkill(
                ref=ref,
                name=ref.rpartition("/")[2],
                text=text,
                mtime=mtime,
                title=f"(does not load: {problem.message})",
                problem=problem.message,
            )
        return found

    def facts_now(self) -> dict[str, FactRow] | None:
        """Every provider's facts by key (``12`` for the local store's, ``<provider>:12`` for
        another's), through the providers' journey hook; None when none has any to show. A
        provider whose facts cannot be read is noted in :attr:`errors` and skipped."""
        self.errors = []
        found: dict[str, FactRow] | None = None
        for provider in self.providers:
            try:
                facts = provider.journey_facts()
            except Exception as exc:
                self.errors.append(f"the facts of {provider.name} could not be read: {exc}")
                continue
            if facts is None:
                continue
            found = found if found is not None else {}
            prefix = "" if provider.name == LOCAL_FACTS else f"{provider.name}:"
            for fact in facts:
                found[f"{prefix}{fact.id}"] = fact
        return found


def _read_skill_md(path: Path) -> tuple[str, float] | None:
    try:
        info = path.stat()
        if info.st_size > 4 * 1024 * 1024:  # the skills store's read ceiling
            return None
        return path.read_bytes().decode("utf-8", errors="replace"), info.st_mtime
    except OSError:
        return None


_SKILL_LABELS = {
    "create": "created",
    "patch": "patched",
    "edit": "rewritten",
    "delete": "deleted",
    "write_file": "file written",
    "remove_file": "file removed",
}


class _Layers:
    """What the builder knows of skills and facts: the state their sources were in at the
    last load, so the next load turns only the differences into changes."""

    def __init__(self) -> None:
        self.log_offset = 0
        self.log_inode: int | None = None
        self.skills: dict[str, str] = {}  # category/name -> SKILL.md text, for existing ones
        self.skill_at: dict[str, float] = {}  # category/name -> time of its last change
        self.disk: dict[str, DiskSkill] = {}
        self.facts: dict[str, FactRow] = {}
        self.errors: list[str] = []

    def gather(self, layers: HomeLayers, now: float) -> list[ItemChange] | None:
        """The changes since the last call, oldest first; None when the skills' history was
        replaced (the builder must start over)."""
        changes: list[ItemChange] = []
        self.errors = []
        try:
            with layers.skills_lock():
                read = layers.skill_records(self.log_offset, self.log_inode)
                if read is None:
                    return None
                records, self.log_offset, self.log_inode = read
                disk = layers.skills_now()
        except OSError as exc:
            self.errors.append(f"skills could not be read: {exc}")
            records, disk = [], self.disk
        for record in records:
            changes += self._record(record)
        changes += self._disk(disk, now)
        facts = layers.facts_now()
        self.errors += layers.errors
        if facts is not None:
            facts = {str(key): fact for key, fact in facts.items()}
        if facts is not None:
            changes += self._facts(facts, now)
        changes.sort(key=lambda c: c.at)
        return changes

    def _record(self, record: SkillChange) -> list[ItemChange]:
        ref = str(record.skill)
        out: list[ItemChange] = []
        common: dict[str, Any] = {
            "origin": record.origin,
            "session_id": record.session_id,
            "pending_id": record.pending_id,
        }
        is_md = record.file == SKILL_FILE
        if record.action != "create" and ref not in self.skills:
            # Changed by Cairn, but made before the history began (or by hand): it existed.
            text = record.before if is_md and record.before is not None else None
            if text is None:
                text = self.disk[ref].text if ref in self.disk else _UNKNOWN
            out.append(
                ItemChange(
                    at=record.at,
                    layer="skill",
                    subject=ref,
                    action="found",
                    text=text,
                    summary=f"skill {ref} (made before the skills' history began)",
                    after=None if text == _UNKNOWN else text,
                    **common,
                )
            )
            self.skills[ref] = text
        label = _SKILL_LABELS.get(record.action, record.action)
        note = "A text was too long to keep in the skills' history." if record.omitted else None
        change = ItemChange(
            at=record.at,
            layer="skill",
            subject=ref,
            action=record.action,
            text=None,
            summary=str(record.summary or f"skill {ref} {label}"),
            before=record.before,
            after=record.after,
            file=None if is_md else record.file,
            note=note,
            **common,
        )
        if record.action == "delete":
            change.gone = True
            change.after = None
            self.skills.pop(ref, None)
        elif is_md:
            text = record.after if record.after is not None else _UNKNOWN
            change.text = text
            self.skills[ref] = text
        self.skill_at[ref] = record.at
        out.append(change)
        return out

    def _disk(self, disk: dict[str, DiskSkill], now: float) -> list[ItemChange]:
        out: list[ItemChange] = []
        for ref, skill in disk.items():
            known = self.skills.get(ref)
            # File times can be in the future (a copied folder, a wrong clock); never after now,
            # and never before the skill's last recorded change.
            at = max(min(skill.mtime, now), self.skill_at.get(ref, 0.0))
            if known is None:
                out.append(
                    ItemChange(
                        at=at,
                        layer="skill",
                        subject=ref,
                        action="found",
                        text=skill.text,
                        summary=f"skill {ref} found (made outside Cairn; its file's time)",
                        after=skill.text,
                        origin="external",
                    )
                )
            elif known == _UNKNOWN:
                pass  # the history left the text out; the folder's is the one to go by
            elif known != skill.text:
                out.append(
                    ItemChange(
                        at=at,
                        layer="skill",
                        subject=ref,
                        action="external_edit",
                        text=skill.text,
                        summary=f"{ref}/SKILL.md edited outside Cairn",
                        before=known,
                        after=skill.text,
                        origin="external",
                    )
                )
            self.skills[ref] = skill.text
            self.skill_at[ref] = max(at, self.skill_at.get(ref, 0.0))
        for ref in [r for r in self.skills if r not in disk]:
            out.append(
                ItemChange(
                    at=now,
                    layer="skill",
                    subject=ref,
                    action="vanished",
                    text=None,
                    gone=True,
                    summary=f"skill {ref} is gone (removed outside Cairn; noticed then)",
                    before=None if self.skills[ref] == _UNKNOWN else self.skills[ref],
                    origin="external",
                )
            )
            del self.skills[ref]
        self.disk = disk
        return out

    def _facts(self, rows: dict[str, FactRow], now: float) -> list[ItemChange]:
        out: list[ItemChange] = []
        for key, row in rows.items():
            old = self.facts.get(key)
            if old is not None and old.created_at != row.created_at:
                # The id was given to a new fact after the old one was removed.
                out.append(_fact_removed(key, old, now))
                old = None
            if old is None:
                updated = row.updated_at > row.created_at
                note = FACT_TEXT_NOTE if updated else None
                out.append(_fact_change(key, row, "add", row.created_at, note=note))
                if updated:
                    out.append(
                        _fact_change(key, row, "update", row.updated_at, note=FACT_TEXT_NOTE)
                    )
            elif row.updated_at != old.updated_at:
                before = old.content if old.content != row.content else None
                out.append(_fact_change(key, row, "update", row.updated_at, before=before))
        out += [_fact_removed(key, old, now) for key, old in self.facts.items() if key not in rows]
        self.facts = rows
        return out


def _fact_change(
    key: str,
    row: FactRow,
    action: str,
    at: float,
    *,
    before: str | None = None,
    note: str | None = None,
) -> ItemChange:
    label = f"fact #{key}" if action == "add" else f"fact #{key} updated"
    return ItemChange(
        at=at,
        layer="fact",
        subject=key,
        action=action,
        text=row.content,
        summary=f"{label}: {_line(row.content)}",
        before=before,
        after=row.content,
        origin="tool",
        note=note,
    )


def _fact_removed(key: str, old: FactRow, now: float) -> ItemChange:
    return ItemChange(
        at=now,
        layer="fact",
        subject=key,
        action="remove",
        text=None,
        gone=True,
        summary=f"fact #{key} removed: {_line(old.content)}",
        before=old.content,
        origin="tool",
        note="The provider does not record removals: this is when the journey noticed it.",
    )


def _line(text: str, limit: int = 80) -> str:
    return preview(text, limit)
