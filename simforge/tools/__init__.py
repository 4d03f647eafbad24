"""tools."""
