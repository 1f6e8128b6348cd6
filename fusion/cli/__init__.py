"""fusion/cli."""
