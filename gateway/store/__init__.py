"""The store as one package: its interface, its implementations, and the repositories that own its SQL."""
