"""YAML from files Cairn did not write itself, loaded with bounds.

PyYAML's safe loader builds aliases as shared references, so a "billion laughs" file loads
quickly, but whoever then walks the data (validation, an error message quoting a value, a dump)
expands it: gigabytes and a hang from a few hundred bytes. :func:`load` refuses more than
:data:`MAX_ALIASES` alias uses, a value that refers to itself, and data that would expand to
more than :data:`MAX_EXPANDED_NODES` values, counting without expanding.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_ALIASES = 200
MAX_EXPANDED_NODES = 100_000


class YamlLimitError(ValueError):
    """The document is refused for its aliases; the message says why (and where)."""


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, counting alias uses as it composes the document."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                line = self.peek_event().start_mark.line + 1
                raise YamlLimitError(
                    f"more than {MAX_ALIASES} YAML aliases (by line {line}); refused rather "
                    "than expanded"
                )
        return super().compose_node(parent, index)


def expanded_nodes(data: Any, limit: int = MAX_EXPANDED_NODES) -> int:
    """How many values ``data`` holds with every alias expanded (each shared node counted once
    per use, without copying it), stopping soon after ``limit``; refuses self-reference."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Any) -> int:
        if not isinstance(node, dict | list):
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise YamlLimitError("a value refers to itself through an alias")
        active.add(key)
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                break
        active.discard(key)
        sizes[key] = total
        return total

    return size(data)


def load(text: str) -> Any:
    """``text`` as YAML data; :class:`YamlLimitError` for an alias bomb, ``yaml.YAMLError``
    for text that is not YAML."""
    loader = _BoundedLoader(text)
    try:
        data = loader.get_single_data()
        expanded = expanded_nodes(data)
    except RecursionError:
        raise YamlLimitError("it is nested too deeply to read") from None
    finally:
        loader.dispose()
    if expanded > MAX_EXPANDED_NODES:
        raise YamlLimitError(
            f"its aliases expand to more than {MAX_EXPANDED_NODES:,} values; refused rather "
            "than expanded"
        )
    return data
