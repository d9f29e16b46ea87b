"""ragtrack: experiment tracking for RAG evaluation."""

__version__ = "0.1.0"
