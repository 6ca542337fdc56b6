"""Per-kind decisions of the operator (resolve references, validate, desired state, diff): pure functions,
no kopf and no I/O, so every decision is unit-tested without a server."""
