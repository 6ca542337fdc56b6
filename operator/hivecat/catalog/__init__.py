"""Metastore catalogs (SQL over the HMS schema, Glue, Thrift) behind one protocol, and relocation."""
