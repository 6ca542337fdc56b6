"""Glue error classification and the default database's race paths, with a botocore Stubber: moto's server
accepts any credentials and never races, so these answers are played back here (no network)."""

from __future__ import annotations

import pytest
from botocore.stub import Stubber

import hivecat.catalog.glue.defaults as defaults
from hivecat.catalog.glue.defaults import ensure_default_database, glue_client
from hivecat.catalog.probes import ProbeResult, glue_failure, probe_glue

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
UNUSED_ENDPOINT = "http://127.0.0.1:9"  # the Stubber answers; nothing is sent


def stubbed_client() -> tuple[object, Stubber]:
    client = glue_client("eu-west-1", UNUSED_ENDPOINT, "AKIAEXAMPLE", SECRET, timeout=1)
    return client, Stubber(client)


def probe_with(monkeypatch: pytest.MonkeyPatch, stubber: Stubber, client: object, **kwargs) -> ProbeResult:
    monkeypatch.setattr(defaults, "glue_client", lambda *args, **kw: client)
    with stubber:
        return probe_glue({"aws_access_key_id": "AKIAEXAMPLE", "aws_secret_access_key": SECRET}, "eu-west-1",
                          kwargs.get("catalog_id"), UNUSED_ENDPOINT, timeout=1)


@pytest.mark.parametrize("code", ["AccessDeniedException", "UnrecognizedClientException", "InvalidClientTokenId",
                                  "InvalidSignatureException", "ExpiredTokenException"])
def test_credential_errors_are_access_denied(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    client, stubber = stubbed_client()
    stubber.add_client_error("get_databases", service_error_code=code,
                             service_message=f"The security token or key {SECRET} is not valid", http_status_code=400)
    result = probe_with(monkeypatch, stubber, client)
    assert (result.ok, result.reason) == (False, "GlueAccessDenied")
    assert code in result.message
    assert SECRET not in result.message and "Traceback" not in result.message


@pytest.mark.parametrize("code", ["ThrottlingException", "InternalServiceException", "OperationTimeoutException"])
def test_service_errors_are_unreachable(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    client, stubber = stubbed_client()
    stubber.add_client_error("get_databases", service_error_code=code, http_status_code=500)
    result = probe_with(monkeypatch, stubber, client)
    assert (result.ok, result.reason) == (False, "GlueUnreachable")


def test_probe_asks_for_one_database_of_the_given_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    client, stubber = stubbed_client()
    stubber.add_response("get_databases", {"DatabaseList": []},
                         expected_params={"MaxResults": 1, "CatalogId": "123456789012"})
    result = probe_with(monkeypatch, stubber, client, catalog_id="123456789012")
    assert (result.ok, result.reason) == (True, "Reachable")
    stubber.assert_no_pending_responses()


def test_no_credentials_is_access_denied(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    result = probe_glue(None, "eu-west-1", None, UNUSED_ENDPOINT, timeout=1)
    assert (result.ok, result.reason) == (False, "GlueAccessDenied")


def test_unknown_session_argument_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        probe_glue({"aws_secret_key": SECRET}, "eu-west-1")


def test_glue_failure_scrubs_given_secrets() -> None:
    from botocore.exceptions import ClientError

    error = ClientError({"Error": {"Code": "SomethingOdd", "Message": f"echo {SECRET}"}}, "GetDatabase")
    result = glue_failure(error, "Glue in eu-west-1", (SECRET,))
    assert (result.ok, result.reason) == (False, "GlueUnreachable")
    assert SECRET not in result.message and "SomethingOdd" in result.message


# --- ensure_default_database's race paths --------------------------------------------------------------

def not_found(stubber: Stubber) -> None:
    stubber.add_client_error("get_database", service_error_code="EntityNotFoundException", http_status_code=400)


def test_concurrent_create_counts_as_present() -> None:
    client, stubber = stubbed_client()
    not_found(stubber)
    stubber.add_client_error("create_database", service_error_code="AlreadyExistsException", http_status_code=400,
                             expected_params={"DatabaseInput": {"Name": "default", "LocationUri": "s3://lake/wh"}})
    stubber.add_response("get_database", {"Database": {"Name": "default", "LocationUri": "s3://theirs/wh"}})
    with stubber:
        outcome = ensure_default_database(client, None, "s3://lake/wh")
    assert (outcome.kind, outcome.location) == ("Present", "s3://theirs/wh")
    stubber.assert_no_pending_responses()


def test_concurrent_create_without_location_is_reported() -> None:
    client, stubber = stubbed_client()
    not_found(stubber)
    stubber.add_client_error("create_database", service_error_code="AlreadyExistsException", http_status_code=400)
    stubber.add_response("get_database", {"Database": {"Name": "default"}})
    with stubber:
        outcome = ensure_default_database(client, None, "s3://lake/wh")
    assert outcome.kind == "MissingLocation"
    stubber.assert_no_pending_responses()  # and no update_database was attempted


def test_other_errors_propagate_for_the_caller_to_classify() -> None:
    from botocore.exceptions import ClientError

    client, stubber = stubbed_client()
    stubber.add_client_error("get_database", service_error_code="AccessDeniedException", http_status_code=400)
    with stubber, pytest.raises(ClientError) as caught:
        ensure_default_database(client, "123456789012", "s3://lake/wh")
    assert glue_failure(caught.value, "Glue in eu-west-1").reason == "GlueAccessDenied"
