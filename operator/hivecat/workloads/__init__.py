"""The Kubernetes objects of a catalog, as plain dict manifests: pure builders, no kopf, no I/O.

No ownerReferences here: the handler adopts each manifest (kopf.adopt) before applying it, so garbage
collection removes them with their custom resource. Names and labels come from workloads.labels."""
