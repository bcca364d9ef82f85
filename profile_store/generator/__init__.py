"""Synthetic multi-app event lake: landing files plus the ground truth to judge the pipeline.

Entry points: :func:`generate_lake` (Python) and ``profiles generate`` (CLI).
"""

from profile_store.generator.lake import DaySummary, GenerationSummary, generate_lake

__all__ = ["DaySummary", "GenerationSummary", "generate_lake"]
