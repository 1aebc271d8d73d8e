"""Reports: terminal (rich), JSON, markdown, HTML and TensorBoard, all from one report document."""

from ._data import SCHEMA, SCHEMA_VERSION, build, headline

__all__ = ["SCHEMA", "SCHEMA_VERSION", "build", "headline"]
