"""Explanations: the typed tree of a decision, and its text, Markdown and JSON renderings."""

from memkg.explain.builder import build_explanation
from memkg.explain.render import FORMATS, render

__all__ = ["FORMATS", "build_explanation", "render"]
