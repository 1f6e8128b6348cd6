"""ONNX builders for megafuse's reference workloads (deterministic, seeded random weights)."""

from .dwsep import MOBILENET_V1_BLOCKS, ODD_BLOCKS, WIDE_BLOCKS, dwsep_block
from .modern import convnext_block, grouped_pw_block
from .mobilenet import REGISTRY, build, mobilenet_v1, mobilenet_v2
from .ocr import ocr_detector, ocr_recognizer, se_classifier
from .quantized import QUANT_REGISTRY, quantize_qdq
from .se_block import mbconv_se

REGISTRY.update(QUANT_REGISTRY)   # *_int8: the fp32 builds quantized by ORT (QDQ)

__all__ = ["MOBILENET_V1_BLOCKS", "ODD_BLOCKS", "REGISTRY", "WIDE_BLOCKS", "build", "convnext_block", "dwsep_block",
           "grouped_pw_block", "mbconv_se", "mobilenet_v1", "mobilenet_v2", "quantize_qdq", "ocr_detector",
           "ocr_recognizer", "se_classifier"]
