"""The megafuse command line (`megafuse`): one module per command; main.py dispatches."""
