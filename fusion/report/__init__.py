"""fusion/report."""
