"""A small synchronous HTTP client for the test control plane's API server (admin identity), for tests that
read or write exact API objects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import requests

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class Api:
    def __init__(self, base_url: str, session: requests.Session) -> None:
        self.base_url = base_url
        self.session = session  # carries the CA and the client certificate

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                **params: Any) -> requests.Response:
        data = None if body is None else json.dumps(body)
        return self.session.request(method, self.base_url + path, data=data, params=params or None,
                                    headers={"Content-Type": content_type}, timeout=30)

    def ok(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
           **params: Any) -> Any:
        """The decoded answer; an AssertionError with the server's Status message otherwise."""
        response = self.request(method, path, body, content_type, **params)
        assert response.ok, f"{method} {path} -> {response.status_code}: {response.text}"
        return response.json()

    def get(self, path: str, **params: Any) -> Any:
        return self.ok("GET", path, **params)

    def create(self, path: str, body: Any) -> Any:
        return self.ok("POST", path, body)

    def merge_patch(self, path: str, patch: Any) -> Any:
        return self.ok("PATCH", path, patch, MERGE)

    def watch(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Watch events until the server ends the stream (pass timeoutSeconds) or the caller stops reading."""
        response = self.session.get(self.base_url + path, params={"watch": "true", **params}, stream=True,
                                    timeout=30)
        assert response.ok, f"watch {path} -> {response.status_code}: {response.text}"
        with response:
            for line in response.iter_lines():
                if line:
                    yield json.loads(line)
