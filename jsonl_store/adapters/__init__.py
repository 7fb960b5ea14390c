"""Optional framework backends, one module per framework, each behind its own extra.

Nothing here is imported by ``jsonl_store`` itself: a module imports its framework when
you import it, and says which extra to install when the framework is missing.
"""
