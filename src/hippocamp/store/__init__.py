"""The profile store: files, segments, FTS5 and vectors in one SQLite file; indexing and search."""

from hippocamp.store.chunking import ChunkerError
from hippocamp.store.db import Store, StoreError, default_store_path
from hippocamp.store.indexer import IndexOptions, IndexReport, index_profile
from hippocamp.store.search import Hit, Searcher, SearchFilters

__all__ = [
    "ChunkerError",
    "Hit",
    "IndexOptions",
    "IndexReport",
    "SearchFilters",
    "Searcher",
    "Store",
    "StoreError",
    "default_store_path",
    "index_profile",
]
