"""Reports: terminal (rich), JSON, markdown, HTML and TensorBoard, all from one report document.

report/model.py types every output document (msgspec Structs); `encode` writes their JSON text and `validate`
reads it back strictly.
"""

from ._data import SCHEMA, SCHEMA_VERSION, build, build_model, headline
from .model import DOCUMENTS, encode, validate

__all__ = ["DOCUMENTS", "SCHEMA", "SCHEMA_VERSION", "build", "build_model", "encode", "headline", "validate"]
