"""Versioned price/spec snapshots shipped with memorybridge (data only; read with importlib.resources)."""
