"""The contextual layer: the RDF projection of memory and its weighted NetworkX view."""
