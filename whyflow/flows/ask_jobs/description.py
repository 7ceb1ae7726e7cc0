"""The dataset's description given to `whyflow ask`: ``--describe TEXT|FILE`` and ``--metadata FILE``.

``--describe`` takes a sentence or a text/markdown file; ``--metadata`` the YAML/JSON file that
``whyflow run --metadata`` takes (read by the same strict loader). Either gives the model the
data's own words (a block of the job's data summary) and gives the question's readers the phrases
it uses for each column (:func:`whyflow.ask.tools.descriptions.column_aliases`), so 'earnings'
reaches ``re78`` when the description says "re78: earnings in 1978".

A ``--describe`` value is a file when one exists there; one that only looks like a path (one
word with a path separator, or ending in .txt, .md, .yaml, .yml or .json) but names nothing is a
mistake, reported before any job folder exists, never read as a sentence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from whyflow.ask.tools.descriptions import column_aliases, merge_aliases, metadata_aliases

__all__ = ["Description", "description_problem", "read_description"]

_PATH_SUFFIXES = (".txt", ".md", ".markdown", ".yaml", ".yml", ".json")
_SUMMARY_CHARS = 1500


@dataclass(frozen=True)
class Description:
    """What the user said of the data: the text the model reads, the free text and the metadata's
    column descriptions the column phrases are read from."""

    text: str = ""
    free_text: str = ""
    column_notes: dict[str, str] = field(default_factory=dict)

    def aliases(self, columns: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """The phrases the description gives for each of these columns it describes."""
        names = [str(c) for c in columns]
        return merge_aliases(metadata_aliases(self.column_notes, names), column_aliases(self.free_text, names))

    def summary_block(self) -> str:
        """The description as the data summary's first block, before the columns' figures, so a
        prompt that cuts the summary short keeps it ('' when none was given)."""
        if not self.text.strip():
            return ""
        text = self.text.strip()
        cut = text if len(text) <= _SUMMARY_CHARS else text[:_SUMMARY_CHARS] + " [...]"
        return f"The data as its description (--describe / --metadata) gives it:\n{cut}\n\n"


def _looks_like_path(value: str) -> bool:
    one_word = not re.search(r"\s", value.strip())
    separator = "/" in value or os.sep in value
    return value.strip().lower().endswith(_PATH_SUFFIXES) or (one_word and separator)


def _kind(value: str) -> str:
    """'file', 'folder' or 'none' for what the value names on disk; a sentence too long to be a
    file's name names none."""
    try:
        path = Path(value).expanduser()
        return "folder" if path.is_dir() else "file" if path.is_file() else "none"
    except (OSError, ValueError):  # a name too long, a NUL byte
        return "none"


def description_problem(describe: str | None, metadata: str | None) -> str | None:
    """Why the description cannot be read (a missing, unreadable or folder file), or None."""
    if describe is not None:
        path = Path(describe).expanduser()
        kind = _kind(describe)
        if not describe.strip():
            return "--describe is empty: give a sentence about the data or a text file"
        if kind == "folder":
            return f"--describe {describe}: is a folder, not a text file"
        if kind == "file":
            problem = _unreadable(path)
            if problem:
                return f"--describe {describe}: {problem}"
        elif _looks_like_path(describe):
            return f"description file not found: {describe}"
    if metadata is not None and _kind(metadata) == "none":
        return f"metadata file not found: {metadata}"
    return None


def _unreadable(path: Path) -> str | None:
    try:
        path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return "is not UTF-8 text"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None


def read_description(describe: str | None, metadata: str | None) -> Description:
    """The description given (checked first by :func:`description_problem`); empty when none was.

    Raises:
        MetadataError: the metadata file is not valid YAML/JSON or breaks its spec.
    """
    texts: list[str] = []
    free: list[str] = []
    notes: dict[str, str] = {}
    if metadata is not None:
        from whyflow.flows.recipes.metadata import read_metadata

        spec, _ = read_metadata(Path(metadata).expanduser())
        notes = {name: c.description for name, c in (spec.columns or {}).items() if c is not None and c.description}
        lines = [spec.description.strip()] if spec.description else []
        lines += [f"- {name}: {note}" for name, note in notes.items()]
        texts.append("\n".join(lines))
        free.append(spec.description or "")
    if describe is not None:
        text = Path(describe).expanduser().read_text(encoding="utf-8") if _kind(describe) == "file" else describe
        texts.append(text.strip())
        free.append(text)
    return Description(text="\n\n".join(t for t in texts if t), free_text="\n".join(free), column_notes=notes)
