"""The file system protocol, locks, directories and whole-file writes."""
