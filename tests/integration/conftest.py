from support.services import (  # noqa: F401  (fixtures are found by name)
    hive_database, hive_metastore, mariadb_server, moto, moto_server, postgres_server, scratch_mariadb,
    scratch_postgres, spark,
)
