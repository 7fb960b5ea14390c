"""Operations: append, compact, recovery, secrets, merges, .gitattributes."""
