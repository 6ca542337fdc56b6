"""kopf handlers: the module `hivecat run` loads. Handlers stay thin (parse spec, call domain code,
patch status); the per-kind handlers arrive with the operator issues."""

from __future__ import annotations

import kopf

from hivecat.kinds import FINALIZER, GROUP


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: object) -> None:
    # Our own names for kopf's bookkeeping, so `kubectl get -o yaml` shows whose they are.
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
    settings.posting.level = 20  # logging.INFO: warnings and infos become Kubernetes Events


from hivecat.handlers import hivecatalog  # noqa: E402,F401  (registers the HiveCatalog handlers)
