"""One module per concern of the store: each owns the SQL of its tables and answers typed rows (frozen
dataclasses). Reads take the ``Store``; writes take a ``Transaction``, so they join the caller's (a state
change and its ledger row commit together). Nothing outside ``gateway/store/`` writes SQL
(tests/test_store_layout.py holds that)."""
