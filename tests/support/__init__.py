"""Helpers shared by hivecat's tests (CRD loading, CEL evaluation, schema checks, services)."""
