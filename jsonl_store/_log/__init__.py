"""The append-only logs: the scanner and writer, the one reader, snapshots, blobs, problems."""
