"""Spark as every process of the project runs it: session settings, progress, Arrow writers."""
