"""goclaw's search library: tokenizer, inverted index with exact BM25, the int8 vector scan,
hybrid fusion and the reranker.

It imports nothing of goclaw, so it can be used and tested on its own; the memory and skills
plugins build their search backends on it.
"""
