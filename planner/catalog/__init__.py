"""The instance and volume catalog: a versioned price/spec snapshot and the code that builds it."""
