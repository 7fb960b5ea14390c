"""Optional backends for agent frameworks, one module per framework, each behind its extra.

Nothing is imported here: ``import jsonl_store.adapters.<framework>`` loads that
framework only, and names the extra to install when it is missing.
"""
