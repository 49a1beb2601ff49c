"""Notes: parsing note files (identity, content hash, revisions), search queries over notes,
a week's digest of notes, and the sample notes that ship with prdigest (kept out of the
team's notes folder).

Pure functions over `bot.domain` objects. May import: `bot.domain`, `bot.config` and the
classifier (`bot.taxonomy`); never the store, readers, delivery, Slack, render, ops or the CLI.
"""
