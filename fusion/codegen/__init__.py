"""fusion/codegen."""
