"""fusion/verify."""
