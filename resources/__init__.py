"""Files Cairn ships: the default persona and the icons."""
