"""A config that follows config.yaml while a session runs.

A session's system prompt is frozen, but switches that guard writes are not: a user who types
`cairn memory approval on` in a terminal expects the agent already running to stage its next
write. The file's identity (inode, size, modification time) is checked before each guarded
write, one ``stat``; only when it changed is the file read again.
"""

from __future__ import annotations

import logging

from engine.config import Config, ConfigError, file_stamp, load_config
from engine.home import Home

log = logging.getLogger(__name__)


class FollowedConfig:
    """``current()`` is the config given at the start until config.yaml changes on disk, then
    what the file says (an invalid edit is logged and the last good config kept)."""

    def __init__(self, home: Home, config: Config) -> None:
        self.home = home
        self._config = config
        # The file as it was when ``config`` was read from it: a write since (another
        # process, between that read and now) is seen at the first ``current()``.
        self._stamp = config._read_stamp if config._from_file else file_stamp(home)

    def current(self) -> Config:
        stamp = file_stamp(self.home)
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
        self._stamp = file_stamp(self.home)
