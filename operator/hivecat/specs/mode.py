"""Which catalog a HiveCatalog is, decided the way AWS EMR decides it: from where the `configurations`
classifications set the Glue client factory.

| factory in hive-site | in spark-hive-site | mode                                            |
|----------------------|--------------------|-------------------------------------------------|
| yes                  | yes                | Glue                                            |
| yes                  | no                 | Glue, and the operator completes the Spark side |
| no                   | yes                | Hybrid (Thrift metastore for Hive, Glue for Spark) |
| no                   | no                 | Thrift                                          |

An explicit spec.mode must agree with the table (the CRD's CEL rule says the same at admission). With no
factory anywhere every explicit mode is allowed: the operator writes both sides of the client configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from hivecat import reasons
from hivecat.specs.errors import SpecInvalid

THRIFT: Final = "Thrift"
GLUE: Final = "Glue"
HYBRID: Final = "Hybrid"
MODES: Final = (THRIFT, GLUE, HYBRID)

FACTORY_PROPERTY: Final = "hive.metastore.client.factory.class"
GLUE_CLIENT_FACTORY: Final = "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"
HIVE_SITE: Final = "hive-site"
SPARK_HIVE_SITE: Final = "spark-hive-site"
SPARK_DEFAULTS: Final = "spark-defaults"
CLASSIFICATIONS: Final = (HIVE_SITE, SPARK_HIVE_SITE, SPARK_DEFAULTS)


@dataclass(frozen=True)
class ModeChoice:
    mode: str  # Thrift | Glue | Hybrid
    # Glue was chosen from hive-site alone: the operator adds the factory to the Spark side too, and a
    # Warning condition tells the user (EMR would have left Spark on its default catalog).
    spark_side_completed: bool


def uses_glue_factory(properties: Mapping[str, str] | None) -> bool:
    return bool(properties) and properties.get(FACTORY_PROPERTY) == GLUE_CLIENT_FACTORY  # type: ignore[union-attr]


def derive_mode(configurations: Mapping[str, Mapping[str, str]], explicit_mode: str | None) -> ModeChoice:
    """The effective mode, or SpecInvalid("ModeContradiction") when `explicit_mode` disagrees with the
    classifications (`configurations`: classification → properties)."""
    if explicit_mode is not None and explicit_mode not in MODES:
        raise SpecInvalid(reasons.INVALID_MODE, f"spec.mode {explicit_mode!r} is not one of {', '.join(MODES)}")
    hive = uses_glue_factory(configurations.get(HIVE_SITE))
    spark = uses_glue_factory(configurations.get(SPARK_HIVE_SITE))
    derived = GLUE if hive else HYBRID if spark else None  # None: no factory, any explicit mode goes
    if explicit_mode is not None and derived is not None and explicit_mode != derived:
        where = "hive-site" if hive else "only spark-hive-site"
        raise SpecInvalid(reasons.MODE_CONTRADICTION,
                          f"spec.mode is {explicit_mode}, but spec.configurations sets the Glue client factory in "
                          f"{where}, which means {derived}. Change spec.mode to {derived}, or remove "
                          f"{FACTORY_PROPERTY} from the classifications")
    mode = explicit_mode or derived or THRIFT
    return ModeChoice(mode, spark_side_completed=mode == GLUE and hive and not spark)
