"""A config that follows config.yaml while a session runs.

A session's system prompt is frozen, but switches that guard writes are not: a user who types
`cairn memory approval on` in a terminal expects the agent already running to stage its next
write. The file's identity (inode, size, modification time) is checked before each guarded
write, one ``stat``; only when it changed is the file read again.
"""

from __future__ import annotations

import logging
import os

from engine.config import Config, ConfigError, load_config
from engine.home import Home

log = logging.getLogger(__name__)

_Stamp = tuple[int, int, int] | None


def _stamp(home: Home) -> _Stamp:
    try:
        info = os.stat(home.config_file)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class FollowedConfig:
    """``current()`` is the config given at the start until config.yaml changes on disk, then
    what the file says (an invalid edit is logged and the last good config kept)."""

    def __init__(self, home: Home, config: Config) -> None:
        self.home = home
        self._config = config
        self._stamp = _stamp(home)

    def current(self) -> Config:
        stamp = _stamp(self.home)
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._config = load_config(self.home)
            except ConfigError as exc:
                log.warning("config.yaml changed but cannot be used, keeping the last: %s", exc)
        return self._config

    def replace(self, config: Config) -> None:
        """Cairn wrote the file itself: take its config and the file as it is now."""
        self._config = config
        self._stamp = _stamp(self.home)
