"""The reference TCP simulator: deterministic event engine, personalities, links, reproductions."""
