"""The retrieval index: a corpus folder cut into chunks (`chunker`), embedded once and kept on disk
(`build`: `index_spec`, `open_index`), and searched (`retriever`: dense, BM25 or hybrid).

May import: `ragtrack.core`, `nlp`, `clients`, `inputs`.
"""
