"""An MCP client written with the official Python SDK, run against
`aleph-tools serve --stdio --browser --config CONFIG --allowed-path DIR`, where CONFIG's
`[browser]` allows `connect:127.0.0.1`.

    browser_client.py --pdf-dir DIR -- COMMAND [ARG...]

The client serves a page on loopback itself, then drives the browser through the server:
navigate, type, click, screenshot, a refused navigation, and a PDF written into DIR. Prints
`ok: …` for each check and `passed: N` at the end; exits non-zero at the first failure.
"""

import http.server
import os
import sys
import threading

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

CHECKS = []

PAGE = b"""<!doctype html><html><head><title>Greeter</title></head><body>
<h1>Say hello</h1>
<label>Name <input id="name"></label>
<button onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value">Greet</button>
<p id="out"></p></body></html>"""


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


def ok(name):
    CHECKS.append(name)
    print(f"ok: {name}", flush=True)


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


def reference(snapshot, needle):
    line = next(line for line in snapshot.splitlines() if needle in line)
    return line.split("[ref=")[1].split("]")[0]


async def run(server, url, pdf_dir):
    async with Client(server, mode="legacy") as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        expected = {
            "browser_navigate", "browser_snapshot", "browser_click", "browser_type",
            "browser_select", "browser_screenshot", "browser_tabs", "browser_wait_for",
            "pdf_generate",
        }
        assert expected <= listed, sorted(listed)
        ok("tools/list: the eight browser tools and pdf_generate")

        opened = await client.call_tool("browser_navigate", {"url": url})
        assert not opened.is_error, text_of(opened)
        snapshot = text_of(opened)
        assert 'heading "Say hello"' in snapshot, snapshot
        assert opened.structured_content["title"] == "Greeter", opened.structured_content
        ok("browser_navigate answers with the page's snapshot")

        name = reference(snapshot, 'textbox "Name"')
        typed = await client.call_tool("browser_type", {"element": name, "text": "Ada"})
        assert not typed.is_error, text_of(typed)
        clicked = await client.call_tool("browser_click", {"element": reference(snapshot, 'button "Greet"')})
        assert "Hello, Ada" in text_of(clicked), text_of(clicked)
        ok("browser_type and browser_click act by reference")

        shot = await client.call_tool("browser_screenshot", {})
        images = [block for block in shot.content if block.type == "image"]
        assert len(images) == 1 and images[0].mime_type == "image/png", shot.content
        ok("browser_screenshot gives a PNG image block")

        refused = await client.call_tool("browser_navigate", {"url": "http://127.0.0.2/"})
        assert refused.is_error, text_of(refused)
        assert "127.0.0.2" in text_of(refused), text_of(refused)
        refused = await client.call_tool("browser_navigate", {"url": "file:///etc/passwd"})
        assert refused.is_error and "only http and https" in text_of(refused), text_of(refused)
        ok("navigations the host rules refuse are error results")

        target = os.path.join(pdf_dir, "notes.pdf")
        printed = await client.call_tool(
            "pdf_generate",
            {"content": "# Notes\n\nWritten by the browser.", "path": target, "page_size": "Letter"},
        )
        assert not printed.is_error, text_of(printed)
        assert printed.structured_content["pages"] == 1, printed.structured_content
        with open(target, "rb") as pdf:
            assert pdf.read(5) == b"%PDF-"
        outside = await client.call_tool("pdf_generate", {"content": "x", "path": "/tmp/outside.pdf"})
        assert outside.is_error and "outside the allowed" in text_of(outside), text_of(outside)
        ok("pdf_generate writes a PDF inside the allowed path, and nowhere else")


def main():
    command = sys.argv[1:]
    pdf_dir = None
    if command[:1] == ["--pdf-dir"]:
        pdf_dir, command = command[1], command[2:]
    command = command[1:] if command[:1] == ["--"] else command
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{web.server_address[1]}/"
    server = StdioServerParameters(command=command[0], args=command[1:])
    anyio.run(run, server, url, pdf_dir)
    web.shutdown()
    print(f"passed: {len(CHECKS)}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"failed: {failure}", file=sys.stderr, flush=True)
        sys.exit(1)
