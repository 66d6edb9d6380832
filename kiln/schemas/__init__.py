"""Request contracts (Pydantic), one module per resource, mirroring the spec tables."""
