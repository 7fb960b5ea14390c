"""One session directory: metadata, forks, summaries, usage, what a store keeps open."""
