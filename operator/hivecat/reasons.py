"""Condition reasons, Event reasons and the reasons of `hivecat route`'s answer: stable CamelCase strings that
users match on in alerts and scripts, so each is spelled once, here, and nowhere else in the operator's code
(tests/unit/test_reasons.py checks both). docs/reasons.md says, for each, where it appears, what it means and
what to do; the policy and ownership reasons below are described in docs/security.md.

This module imports nothing from hivecat: it is the lowest layer, and every other one may use it.
"""

from __future__ import annotations

from typing import Final

# --- the admin's policy (CatalogPolicy): what a namespace may use ------------------------------------------
STORAGE_NOT_ALLOWED: Final = "StorageNotAllowed"            # a filesystem outside the storage granted
STORAGE_CLAIM_CONFLICT: Final = "StorageClaimConflict"      # storage another namespace registered first
AMBIENT_CREDENTIALS_NOT_ALLOWED: Final = "AmbientCredentialsNotAllowed"  # would act as the operator itself
COMPUTE_NOT_ALLOWED: Final = "ComputeNotAllowed"            # a compute type not granted (e.g. Local)
METASTORE_NOT_ALLOWED: Final = "MetastoreNotAllowed"        # a metastore database host not granted
GLUE_NOT_ALLOWED: Final = "GlueNotAllowed"                  # a Glue region, catalog id or endpoint not granted
ROLE_NOT_ALLOWED: Final = "RoleNotAllowed"                  # an IAM role not granted to the namespace
KERBEROS_NOT_ALLOWED: Final = "KerberosNotAllowed"          # a principal or keytab Secret not granted to it
INTERVAL_BELOW_MINIMUM: Final = "IntervalBelowMinimum"      # a schedule faster than the admin allows
POLICY_INVALID: Final = "PolicyInvalid"                     # a CatalogPolicy the operator cannot read
IMAGE_NOT_ALLOWED: Final = "ImageNotAllowed"
SERVICE_ACCOUNT_NOT_ALLOWED: Final = "ServiceAccountNotAllowed"
CROSS_NAMESPACE_REFERENCE: Final = "CrossNamespaceReference"

POLICY_REASONS: Final = (STORAGE_NOT_ALLOWED, STORAGE_CLAIM_CONFLICT, AMBIENT_CREDENTIALS_NOT_ALLOWED,
                         COMPUTE_NOT_ALLOWED, METASTORE_NOT_ALLOWED, GLUE_NOT_ALLOWED, ROLE_NOT_ALLOWED,
                         INTERVAL_BELOW_MINIMUM, POLICY_INVALID, IMAGE_NOT_ALLOWED, SERVICE_ACCOUNT_NOT_ALLOWED,
                         CROSS_NAMESPACE_REFERENCE, KERBEROS_NOT_ALLOWED)

# --- ownership: hivecat acts only on what it made for this resource -----------------------------------------
NAME_TAKEN: Final = "NameTaken"                             # an object of that name that hivecat did not create
TABLE_ALREADY_REPLICATED: Final = "TableAlreadyReplicated"  # another TableReplica keeps this table
INSECURE_AUTHENTICATION: Final = "InsecureAuthentication"   # a database asked for the password in clear text

# The condition a resource gets while the policy is only audited (chart value policy.enforcement: Audit):
# what would be refused is reported, nothing is blocked.
POLICY_COMPLIANT: Final = "PolicyCompliant"

# Described in docs/security.md (every other reason is in docs/reasons.md).
SECURITY_REASONS: Final = (*POLICY_REASONS, NAME_TAKEN, TABLE_ALREADY_REPLICATED, INSECURE_AUTHENTICATION,
                           POLICY_COMPLIANT)

# --- every kind ----------------------------------------------------------------------------------------------
DELETION_BLOCKED: Final = "DeletionBlocked"                 # Ready False: a deletion waits for what still uses it
APPLIED: Final = "Applied"                                  # CatalogPolicy Ready True: the operator applies it

# --- a spec the CRD could not refuse (specs/: SpecInvalid) ----------------------------------------------------
INVALID_FIELD: Final = "InvalidField"                       # a field of the wrong type, value or characters
INVALID_MODE: Final = "InvalidMode"                         # spec.mode is not Thrift, Glue or Hybrid
MODE_CONTRADICTION: Final = "ModeContradiction"             # spec.mode disagrees with the Glue client factory
DATABASE_MISSING: Final = "DatabaseMissing"                 # a Thrift or Hybrid catalog without spec.database
DATABASE_INCOMPLETE: Final = "DatabaseIncomplete"           # spec.database lacks host, name, user or password
DERBY_REPLICAS: Final = "DerbyReplicas"                     # embedded Derby with more than one metastore replica
GLUE_MISSING: Final = "GlueMissing"                         # a Glue or Hybrid catalog without spec.glue(.region)
GLUE_CREDENTIALS_CONFLICT: Final = "GlueCredentialsConflict"  # both credentialsSecretRef and roleArn
UNKNOWN_CLASSIFICATION: Final = "UnknownClassification"     # spec.configurations names an unknown classification
DUPLICATE_CLASSIFICATION: Final = "DuplicateClassification"  # ... or one twice
SECRET_IN_CONFIGURATION: Final = "SecretInConfiguration"    # a secret property or value in spec.configurations
INVALID_HIVE_VERSION: Final = "InvalidHiveVersion"          # spec.metastore.hiveVersion is no Hive release
INVALID_FILESYSTEM: Final = "InvalidFilesystem"             # ClusterStorage spec.filesystem is no storage URI
INVALID_ALIAS: Final = "InvalidAlias"                       # ... nor is one of spec.aliases
ALIAS_OVERLAP: Final = "AliasOverlap"                       # aliases overlapping each other or the filesystem
INVALID_SCAN_INTERVAL: Final = "InvalidScanInterval"        # spec.scanInterval is no duration from 1s to 7d
COMPUTE_INCOMPLETE: Final = "ComputeIncomplete"             # a Job or SparkApplication compute without an image
INVALID_CLUSTERS: Final = "InvalidClusters"                 # TableReplica primary, active, secondaries disagree
INVALID_SCHEDULE: Final = "InvalidSchedule"                 # TableReplica spec.schedule.interval is no duration

# --- Secrets a resource references (apierrors.SecretUnavailable) ---------------------------------------------
SECRET_NOT_FOUND: Final = "SecretNotFound"
SECRET_FORBIDDEN: Final = "SecretForbidden"                 # the operator may not read it (RBAC)
SECRET_KEY_NOT_FOUND: Final = "SecretKeyNotFound"           # no such key, or not UTF-8 text
KEYTAB_MISMATCH: Final = "KeytabMismatch"                   # the key holds no keytab, or none for the principal

# --- a catalog's backends: probes (catalog.probes) and opening a catalog (catalog.connect) ------------------
REACHABLE: Final = "Reachable"                              # BackendReachable True
DATABASE_UNREACHABLE: Final = "DatabaseUnreachable"         # the metastore database does not answer
AUTHENTICATION_FAILED: Final = "AuthenticationFailed"       # the database (or Glue, when opened) refused the login
DATABASE_NOT_FOUND: Final = "DatabaseNotFound"              # the server has no such database
NOT_A_METASTORE: Final = "NotAMetastore"                    # the database holds no Hive metastore schema
INVALID_JOURNAL: Final = "InvalidJournal"                   # a journal placement the SQL catalog refuses
BACKEND_UNREACHABLE: Final = "BackendUnreachable"           # Glue did not answer when the catalog was opened
METASTORE_UNREACHABLE: Final = "MetastoreUnreachable"       # the Thrift metastore does not answer
GLUE_UNREACHABLE: Final = "GlueUnreachable"                 # Glue (or STS) did not answer, or answered an error
GLUE_ACCESS_DENIED: Final = "GlueAccessDenied"              # Glue (or STS) refused the credentials
JOURNAL_UNAVAILABLE: Final = "JournalUnavailable"           # the relocation journal cannot be created or written

# --- HiveCatalog: Ready, SchemaReady, BackendReachable, Warning and its Events ------------------------------
READY: Final = "Ready"                                      # Ready True: the catalog serves clients
NOT_READY: Final = "NotReady"                               # Ready False: not serving yet, nothing else to say
MODE_SWITCH_NOT_CONFIRMED: Final = "ModeSwitchNotConfirmed"  # a mode switch without the confirm annotation
SPARK_SIDE_COMPLETED: Final = "SparkSideCompleted"          # Warning True: Spark configured for Glue as well
SCALED_TO_ZERO: Final = "ScaledToZero"                      # spec.metastore.replicas is 0
METASTORE_STARTING: Final = "MetastoreStarting"             # no metastore pod is ready yet
METASTORE_NOT_RUNNING: Final = "MetastoreNotRunning"        # BackendReachable Unknown: the database answers
EMBEDDED_DERBY: Final = "EmbeddedDerby"                     # SchemaReady Unknown: Derby's schema is not checked
SCHEMA_CURRENT: Final = "SchemaCurrent"                     # SchemaReady True
SCHEMA_JOB_RUNNING: Final = "SchemaJobRunning"
SCHEMA_JOB_FAILED: Final = "SchemaJobFailed"
SCHEMA_JOB_SUCCEEDED_BUT_VERSION_BEHIND: Final = "SchemaJobSucceededButVersionBehind"
SCHEMA_UNREADABLE: Final = "SchemaUnreadable"               # connected, but VERSION could not be read
AMBIGUOUS_VERSION: Final = "AmbiguousVersion"               # the schema refusals (workloads.schema.Refuse)
SCHEMA_WITHOUT_VERSION: Final = "SchemaWithoutVersion"
SCHEMA_VERSION_UNKNOWN: Final = "SchemaVersionUnknown"
SCHEMA_NEWER_THAN_IMAGE: Final = "SchemaNewerThanImage"
DEFAULT_LOCATION_MISSING: Final = "DefaultLocationMissing"  # Glue: no location for the default database
DEFAULT_DATABASE_WITHOUT_LOCATION: Final = "DefaultDatabaseWithoutLocation"  # Glue's default has none
MODE_SWITCHED: Final = "ModeSwitched"                       # Events (Normal)
METASTORE_CREATED: Final = "MetastoreCreated"
METASTORE_REMOVED: Final = "MetastoreRemoved"
SCHEMA_JOB_CREATED: Final = "SchemaJobCreated"

# --- ClusterStorage: Ready (the cluster registry), Drifted and its Event ------------------------------------
REGISTERED: Final = "Registered"                            # Ready True
CATALOG_NOT_FOUND: Final = "CatalogNotFound"                # the HiveCatalog named does not exist (TableReplica too)
DUPLICATE_FILESYSTEM: Final = "DuplicateFilesystem"         # registry rejections (replication.registry)
FILESYSTEM_OVERLAP: Final = "FilesystemOverlap"
ALIAS_IS_FILESYSTEM: Final = "AliasIsFilesystem"
DATABASE_NOT_SCANNABLE: Final = "DatabaseNotScannable"      # an embedded Derby catalog scanned as a database
INVALID_GLUE_TARGET: Final = "InvalidGlueTarget"            # the catalog's Glue settings make no Glue target
DRIFTED: Final = "Drifted"                                  # Drifted True: locations name an old filesystem
NO_DRIFT: Final = "NoDrift"                                 # Drifted False
REFUSED: Final = "Refused"                                  # Drifted True, all of it refused for other reasons
RELOCATION_IN_PROGRESS: Final = "RelocationInProgress"      # Drifted Unknown: another run holds the catalog's lock
# The location engine's refusals (catalog.model.Refusal reasons iceberg, acid, ...) as Drifted reasons.
ICEBERG: Final = "Iceberg"
ACID: Final = "Acid"
TOO_LONG: Final = "TooLong"
CHARSET: Final = "Charset"
SCHEME_CHANGE: Final = "SchemeChange"                       # also a ClusterStorage alias of another storage family
OVERLAP: Final = "Overlap"
INVALID_LOCATION: Final = "InvalidLocation"
NOT_FOUND: Final = "NotFound"
DRIFT_REPAIRED: Final = "DriftRepaired"                     # Event (Normal)

# --- TableReplica: Ready, InSync, Degraded and its Events ---------------------------------------------------
ACTIVE_AVAILABLE: Final = "ActiveAvailable"                 # Ready True
ALL_UNITS_VERIFIED: Final = "AllUnitsVerified"              # InSync True
UNITS_BEHIND: Final = "UnitsBehind"                         # InSync False
NO_PROBLEMS: Final = "NoProblems"                           # Degraded False
SYNC_PROBLEMS: Final = "SyncProblems"                       # Degraded True
PRIMARY_UNKNOWN: Final = "PrimaryUnknown"                   # the table is on no registered cluster
CLUSTER_NOT_REGISTERED: Final = "ClusterNotRegistered"      # a cluster named is not in the registry
CLUSTER_NOT_FOUND: Final = "ClusterNotFound"                # a secondary's ClusterStorage gone when a copy starts
ACTIVE_UNKNOWN: Final = "ActiveUnknown"                     # the table is on none of the clusters named
TABLE_NOT_FOUND: Final = "TableNotFound"                    # no such table (hivecat route too)
INVALID_FILTER: Final = "InvalidFilter"                     # spec.partitions.filter does not fit the table
SYNC_ERROR: Final = "SyncError"                             # the pass failed (storage, a table dropped meanwhile)
JOURNAL_NOT_CONFIGURED: Final = "JournalNotConfigured"      # a switch of a Glue/Thrift catalog without a journal
FAILOVER_REFUSED: Final = "FailoverRefused"                 # the switch's gate (replication.failover)
FAILBACK_REFUSED: Final = "FailbackRefused"
FAILBACK_CANCELLED: Final = "FailbackCancelled"
FAILBACK_COPYING: Final = "FailbackCopying"                 # the failback's copy runs; the switch follows it
DIVERGED: Final = "Diverged"                                 # a failback holds units changed on both sides
SWITCH_FINISHING: Final = "SwitchFinishing"                 # units a failover left behind are being copied
RELOCATION_REFUSED: Final = "RelocationRefused"             # the location engine refused the switch's relocation
SYNCED: Final = "Synced"                                    # Events: Normal ...
FAILED_OVER: Final = "FailedOver"
FAILED_BACK: Final = "FailedBack"
SYNC_FAILED: Final = "SyncFailed"                           # ... and Warning
BOOKKEEPING_LEFT: Final = "BookkeepingLeft"

# --- `hivecat route`: why a cluster was chosen, or none (its JSON `reason`; no condition) -------------------
OUTPUT_PRIMARY: Final = "OutputPrimary"
INPUT_PRIMARY: Final = "InputPrimary"
FORCED: Final = "Forced"                                    # --cluster holds every input
NO_CLUSTER: Final = "NoCluster"
NOT_ON_CLUSTER: Final = "NotOnCluster"
NOT_OUTPUT_PRIMARY: Final = "NotOutputPrimary"
OUTPUT_WITHOUT_PRIMARY: Final = "OutputWithoutPrimary"
