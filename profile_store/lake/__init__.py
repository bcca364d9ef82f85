"""The lake: where it lives (a directory or an S3 prefix), its layout, and its landing area."""
