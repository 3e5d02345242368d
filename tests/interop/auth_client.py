"""Bearer-token auth of aleph-tools' HTTP MCP server, checked with the official Python SDK.

    auth_client.py --url URL --mode legacy|auto

The server (`tests/tests/mcp_auth.rs`) knows the tokens `alice-token` (scopes `tools:call`
and `notes:write`), `bob-token` (`tools:call`) and `carol-token` (no scope), requires
`tools:call`, names `https://auth.example.com` as its authorization server, and serves
`whoami` and `write_note`, which needs `notes:write` (and is listed only to who has it). Prints `ok: …` for each check and
`passed: N` at the end; exits non-zero at the first failure.
"""

import argparse
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import ProtectedResourceMetadata

CHECKS = []

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "auth-probe", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream"}


def ok(name):
    CHECKS.append(name)
    print(f"ok: {name}", flush=True)


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


def connect(url, mode, token):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), mode=mode)


async def run(url, mode):
    origin = url.rsplit("/mcp", 1)[0]
    async with httpx2.AsyncClient() as http:
        refused = await http.post(url, json=INITIALIZE, headers=HEADERS)
        assert refused.status_code == 401, refused
        metadata_url = extract_resource_metadata_from_www_auth(refused)
        assert metadata_url == f"{origin}/.well-known/oauth-protected-resource/mcp", refused.headers
        assert extract_scope_from_www_auth(refused) == "tools:call", refused.headers
        ok("a request without a token is refused with 401 and a challenge the SDK reads")

        document = await http.get(metadata_url)
        assert document.status_code == 200, document
        metadata = ProtectedResourceMetadata.model_validate_json(document.content)
        assert str(metadata.resource) == url, metadata
        assert [str(s) for s in metadata.authorization_servers] == ["https://auth.example.com"], metadata
        assert set(metadata.scopes_supported) == {"tools:call", "notes:write"}, metadata
        root = await http.get(f"{origin}/.well-known/oauth-protected-resource")
        assert ProtectedResourceMetadata.model_validate_json(root.content) == metadata
        ok("the protected-resource metadata document is served, as the SDK parses it")

        wrong = await http.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401, wrong
        assert extract_field_from_www_auth(wrong, "error") == "invalid_token", wrong.headers
        ok("an unknown token gets error=invalid_token")

        scopeless = await http.post(
            url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer carol-token"}
        )
        assert scopeless.status_code == 403, scopeless
        assert extract_field_from_www_auth(scopeless, "error") == "insufficient_scope", scopeless.headers
        assert extract_scope_from_www_auth(scopeless) == "tools:call", scopeless.headers
        ok("a token without the required scope gets 403 naming it")

    async with connect(url, mode, "alice-token") as alice:
        alice_tools = sorted(tool.name for tool in (await alice.list_tools()).tools)
        who = await alice.call_tool("whoami", {})
        assert not who.is_error and text_of(who) == "alice: notes:write tools:call", who
        wrote = await alice.call_tool("write_note", {"text": "hello"})
        assert not wrote.is_error and text_of(wrote) == "alice wrote: hello", wrote
        ok("a call with a token runs as its identity, its scopes granted")

    async with connect(url, mode, "bob-token") as bob:
        bob_tools = sorted(tool.name for tool in (await bob.list_tools()).tools)
        who = await bob.call_tool("whoami", {})
        assert text_of(who) == "bob: tools:call", who
        refused = await bob.call_tool("write_note", {"text": "hello"})
        assert refused.is_error and "notes:write" in text_of(refused), refused
        ok("another token is another identity, refused what its scopes do not allow")

    assert "write_note" in alice_tools, alice_tools
    assert bob_tools == [name for name in alice_tools if name != "write_note"], bob_tools
    ok("each identity is listed only the tools its scopes let it call")

    print(f"passed: {len(CHECKS)}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--mode", default="auto")
    args = parser.parse_args()
    anyio.run(run, args.url, args.mode)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # report the first failed check and fail
        print(f"FAILED after {len(CHECKS)} checks: {error!r}", file=sys.stderr, flush=True)
        raise
