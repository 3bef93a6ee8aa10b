"""What goclaw reads of plugin ``goclaw.tokens`` without importing it (its manifest: entry-point
group ``goclaw.manifests``; the attributes are described in :mod:`goclaw.plugins`)."""

from __future__ import annotations

TOKENIZERS = ("o200k_base", "cl100k_base")
