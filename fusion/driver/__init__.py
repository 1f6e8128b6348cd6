"""fusion/driver."""
