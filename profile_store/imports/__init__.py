"""``profiles import``: events from CSV, Parquet or JSON Lines into the lake's landing area."""
