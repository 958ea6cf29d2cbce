"""``Request`` and ``Response``: frozen values, built fast (one of each per attempt)."""

from __future__ import annotations

import attrs
import pytest
import yarl
from multidict import CIMultiDictProxy

from svc_async import Request, Response


def test_request_and_response_stay_frozen_values_with_any_mapping_of_headers() -> None:
    url = yarl.URL("https://v.example/a")
    request = Request("GET", url, {"X-Key": "1"})
    assert isinstance(request.headers, CIMultiDictProxy) and request.headers["x-key"] == "1"
    assert (request.content, request.timeout) == (None, None)
    assert Request("GET", url).headers == {}
    response = Response(200, {"Content-Type": "text/plain"}, b"hi", request)
    assert response.headers["content-type"] == "text/plain" and response.request is request
    assert Response(204).headers == {} and Response(204).content == b""
    same = Response(status=200, headers=response.headers, content=b"hi", request=request)
    assert same == response
    moved = attrs.evolve(response, status=201, headers={"A": "b"})
    assert moved.status == 201 and moved.headers["a"] == "b" and moved.content == b"hi"
    for value, name in ((request, "method"), (response, "status")):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(value, name, "x")
