"""kiln's benchmark harness: kiln's hottest routes against a bare Litestar route on the same data."""
