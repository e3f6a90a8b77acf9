"""Repositories: one module per concern of the store, owning every SQL string of it and answering typed rows.

Reads take a ``Store``; writes take the caller's ``Transaction``, so a read-check-write sequence (claiming a
task, executing an intent once) stays one transaction of the caller's.
"""
