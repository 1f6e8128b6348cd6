"""The bottom layer: graph IR, the SoC table with its sources, errors, logging, name sanitizing, the check tolerance, the version. Imports nothing else of the project."""
