"""Reports: bench (fused vs unfused vs peers, MODELED or MEASURED) and Chrome traces."""
