"""Catalogs reached through an API without transactions (Glue, Thrift): one shared, journaled relocation driver."""
