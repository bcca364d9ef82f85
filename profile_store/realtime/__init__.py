"""The real-time path's consumers of the events topic (the lake sink first)."""
