"""Signed attestations of the merges the gateway publishes: in-toto statements in DSSE envelopes (docs/attestations.md).

- ``statement.py``: the statement and its predicate, from the store's records
- ``dsse.py``: envelopes, their signatures (PAE) and the published keys (JWKS)
- ``attestations.py``: signing, storing (the store, the ledger, a git note), recovery, verification
"""
