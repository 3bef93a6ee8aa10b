"""tiktoken's encodings as tokenizers (``o200k_base``, ``cl100k_base``), loaded offline."""
