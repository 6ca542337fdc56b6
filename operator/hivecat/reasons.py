"""Condition reasons of the admin's policy and of ownership: stable CamelCase strings that users match on in
alerts and scripts, so each is spelled once, here (docs/security.md lists them with what to do).

Older reasons still live beside the code that states them; they move here as that code is touched.
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
INTERVAL_BELOW_MINIMUM: Final = "IntervalBelowMinimum"      # a schedule faster than the admin allows
POLICY_INVALID: Final = "PolicyInvalid"                     # a CatalogPolicy the operator cannot read
IMAGE_NOT_ALLOWED: Final = "ImageNotAllowed"
SERVICE_ACCOUNT_NOT_ALLOWED: Final = "ServiceAccountNotAllowed"
CROSS_NAMESPACE_REFERENCE: Final = "CrossNamespaceReference"

POLICY_REASONS: Final = (STORAGE_NOT_ALLOWED, STORAGE_CLAIM_CONFLICT, AMBIENT_CREDENTIALS_NOT_ALLOWED,
                         COMPUTE_NOT_ALLOWED, METASTORE_NOT_ALLOWED, GLUE_NOT_ALLOWED, ROLE_NOT_ALLOWED,
                         INTERVAL_BELOW_MINIMUM, POLICY_INVALID, IMAGE_NOT_ALLOWED, SERVICE_ACCOUNT_NOT_ALLOWED,
                         CROSS_NAMESPACE_REFERENCE)

# --- ownership: hivecat acts only on what it made for this resource -----------------------------------------
NAME_TAKEN: Final = "NameTaken"                             # an object of that name that hivecat did not create
TABLE_ALREADY_REPLICATED: Final = "TableAlreadyReplicated"  # another TableReplica keeps this table
INSECURE_AUTHENTICATION: Final = "InsecureAuthentication"   # a database asked for the password in clear text

# The condition a resource gets while the policy is only audited (chart value policy.enforcement: Audit):
# what would be refused is reported, nothing is blocked.
POLICY_COMPLIANT: Final = "PolicyCompliant"
