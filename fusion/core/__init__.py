"""fusion/core."""
