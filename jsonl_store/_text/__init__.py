"""Text transforms on the lowest floor: substring and regular-expression search, redaction."""
