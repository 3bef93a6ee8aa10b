"""LanceDB memory search backend (optional plugin ``goclaw.lancedb``; ``pip install 'goclaw[lancedb]'``)."""
