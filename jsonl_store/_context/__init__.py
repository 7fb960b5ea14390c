"""Messages as parts, dialects, tool batches, restored contexts and provider shapes."""
