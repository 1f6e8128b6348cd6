"""The ONNX frontend: import, operator converters and shape rules, constant folding, subgraph cut, input validation."""
