"""What a reader of the spec sees: records, the line codec, file names, ids (spec/FORMAT.md)."""
