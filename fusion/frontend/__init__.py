"""fusion/frontend."""
