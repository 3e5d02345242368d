"""Rebuilds corpus.json: the tool lists of real, published MCP servers, for the search tests.

Each server in SERVERS is installed at its pinned version into a scratch dir (npm or a venv,
never globally), started over stdio with dummy credentials, and asked for `tools/list` through
the official MCP Python SDK. Run by hand, not by CI:  tests/interop/.venv/bin/python collect.py
"""

import json, logging, os, subprocess, sys
from pathlib import Path

import anyio
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = Path(__file__).parent
WORK = Path(os.environ.get("CORPUS_WORK", "/tmp/corpus-work"))
CAP = 40  # at most this many tools from one package, spread evenly over its list
LICENSES = ("MIT", "Apache-2.0", "BSD", "ISC")
DUMMY = {k: "dummy" for k in (
    "GITHUB_PERSONAL_ACCESS_TOKEN GOOGLE_MAPS_API_KEY BRAVE_API_KEY EVERART_API_KEY FIRECRAWL_API_KEY "
    "EXA_API_KEY TAVILY_API_KEY SUPABASE_ACCESS_TOKEN PRIVATE_APP_ACCESS_TOKEN AIRTABLE_API_KEY API_KEY "
    "DISCORD_TOKEN LINEAR_API_KEY TRELLO_API_KEY TRELLO_TOKEN TRELLO_BOARD_ID ES_API_KEY JIRA_API_TOKEN "
    "CONFLUENCE_API_TOKEN AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY").split()}
DUMMY |= {"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T0", "AWS_REGION": "us-east-1",
          "ES_URL": "http://localhost:9200", "OTEL_SDK_DISABLED": "true",
          "JIRA_URL": "https://example.atlassian.net", "JIRA_USERNAME": "me@example.com",
          "CONFLUENCE_URL": "https://example.atlassian.net/wiki", "CONFLUENCE_USERNAME": "me@example.com",
          "HOME": str(WORK / "home"), "GDRIVE_CREDENTIALS_PATH": str(WORK / "home/gdrive.json"),
          "GOOGLE_OAUTH_CREDENTIALS": str(WORK / "home/.gmail-mcp/gcp-oauth.keys.json")}

# (short id, registry, package, version, extra args)
SERVERS = [
    ("filesystem", "npm", "@modelcontextprotocol/server-filesystem", "2026.1.14", [str(WORK)]),
    ("memory", "npm", "@modelcontextprotocol/server-memory", "2026.1.26", []),
    ("everything", "npm", "@modelcontextprotocol/server-everything", "2026.1.26", []),
    ("github", "npm", "@modelcontextprotocol/server-github", "2025.4.8", []),
    ("sequential-thinking", "npm", "@modelcontextprotocol/server-sequential-thinking", "2025.12.18", []),
    ("puppeteer", "npm", "@modelcontextprotocol/server-puppeteer", "2025.5.12", []),
    ("slack", "npm", "@modelcontextprotocol/server-slack", "2025.4.25", []),
    ("google-maps", "npm", "@modelcontextprotocol/server-google-maps", "0.6.2", []),
    ("postgres", "npm", "@modelcontextprotocol/server-postgres", "0.6.2", ["postgresql://localhost/dummy"]),
    ("gdrive", "npm", "@modelcontextprotocol/server-gdrive", "2025.1.14", []),
    ("aws-kb", "npm", "@modelcontextprotocol/server-aws-kb-retrieval", "0.6.2", []),
    ("everart", "npm", "@modelcontextprotocol/server-everart", "0.6.2", []),
    ("playwright", "npm", "@playwright/mcp", "0.0.83", []),
    ("ea-playwright", "npm", "@executeautomation/playwright-mcp-server", "1.0.12", []),
    ("chrome-devtools", "npm", "chrome-devtools-mcp", "1.11.0", []),
    ("browserbase", "npm", "@browserbasehq/mcp-server-browserbase", "2.4.3", []),
    ("notion", "npm", "@notionhq/notion-mcp-server", "2.5.2", []),
    ("context7", "npm", "@upstash/context7-mcp", "4.1.1", []),
    ("firecrawl", "npm", "firecrawl-mcp", "3.22.2", []),
    ("exa", "npm", "exa-mcp-server", "3.4.1", []),
    ("tavily", "npm", "tavily-mcp", "0.2.22", []),
    ("brave-search", "npm", "@brave/brave-search-mcp-server", "2.1.4", []),
    ("supabase", "npm", "@supabase/mcp-server-supabase", "0.13.0",  # the docs feature needs the network
     ["--features=account,database,debugging,development,functions,branching,storage"]),
    ("stripe", "npm", "@stripe/mcp", "0.2.5", ["--tools=all", "--api-key=sk_test_dummy"]),  # 0.3 proxies to a remote
    ("kubernetes", "npm", "mcp-server-kubernetes", "4.1.7", []),
    ("desktop-commander", "npm", "@wonderwhy-er/desktop-commander", "0.2.52", []),
    ("mongodb", "npm", "mongodb-mcp-server", "3.0.4", []),
    ("hubspot", "npm", "@hubspot/mcp-server", "0.4.0", []),
    ("cloudflare", "npm", "@cloudflare/mcp-server-cloudflare", "0.2.0", ["run", "dummy-account"]),
    ("circleci", "npm", "@circleci/mcp-server-circleci", "0.20.0", []),
    ("shopify", "npm", "@shopify/dev-mcp", "1.16.0", []),
    ("currents", "npm", "@currents/mcp", "2.1.1", []),
    ("elasticsearch", "npm", "@elastic/mcp-server-elasticsearch", "0.3.1", []),
    ("youtube-transcript", "npm", "@kimtaeyoon83/mcp-server-youtube-transcript", "0.1.1", []),
    ("gmail", "npm", "@gongrzhe/server-gmail-autoauth-mcp", "1.1.11", []),
    ("google-calendar", "npm", "@cocal/google-calendar-mcp", "2.6.3", []),
    ("airtable", "npm", "airtable-mcp-server", "1.14.0", []),
    ("open-meteo", "npm", "open-meteo-mcp-server", "1.1.3", []),
    ("weather", "npm", "@h1deya/mcp-server-weather", "0.1.3", []),
    ("discord", "npm", "mcp-discord", "1.3.4", []),
    ("todoist", "npm", "todoist-mcp", "1.3.4", []),
    ("linear", "npm", "@tacticlaunch/mcp-linear", "1.4.3", []),
    ("trello", "npm", "@delorenj/mcp-server-trello", "1.8.1", []),
    ("git", "pypi", "mcp-server-git", "2026.10.19", ["--repository", str(WORK / "repo")]),
    ("time", "pypi", "mcp-server-time", "2026.10.19", []),
    ("fetch", "pypi", "mcp-server-fetch", "2026.10.24", []),
    ("atlassian", "pypi", "mcp-atlassian", "0.23.1", []),
    ("aws-docs", "pypi", "awslabs.aws-documentation-mcp-server", "1.2.3", []),
    ("dynamodb", "pypi", "awslabs.dynamodb-mcp-server", "2.1.8", []),
    ("cloudwatch", "pypi", "awslabs.cloudwatch-mcp-server", "0.3.1", []),
    ("eks", "pypi", "awslabs.eks-mcp-server", "0.2.1", []),
]


def prepare():
    """Dummy credential files some servers insist on reading at start."""
    home = WORK / "home"
    keys = {"installed": {"client_id": "dummy", "client_secret": "dummy", "redirect_uris": ["http://localhost"]}}
    token = {"access_token": "dummy", "refresh_token": "dummy", "token_type": "Bearer", "expiry_date": 4102444800000}
    files = {".gmail-mcp/gcp-oauth.keys.json": keys, ".gmail-mcp/credentials.json": token, "gdrive.json": token}
    for rel, body in files.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(json.dumps(body))
    wrangler = home / ".config/.wrangler/config/default.toml"
    wrangler.parent.mkdir(parents=True, exist_ok=True)
    wrangler.write_text('oauth_token = "dummy"\nexpiration_time = "2099-01-01T00:00:00.000Z"\n')
    if not (WORK / "repo/.git").exists():
        subprocess.run(["git", "init", "-q", str(WORK / "repo")], check=True)


def first_line_license(path):
    """'MIT License' / 'Apache License' at the top of a shipped license file."""
    head = path.read_text(errors="replace").strip().splitlines()[0] if path.exists() else ""
    return {"MIT License": "MIT", "ISC License": "ISC"}.get(head.strip(), "Apache-2.0" if "Apache" in head else None)


def install(sid, registry, package, version):
    """Installs one package; returns (command, args prefix, exact version, license)."""
    root = WORK / registry / sid
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PUPPETEER_SKIP_DOWNLOAD": "1", "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}
    if registry == "npm":
        meta_path = root / "node_modules" / package / "package.json"
        if not meta_path.exists():
            (root / "package.json").write_text('{"private": true}')
            subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", f"{package}@{version}"],
                           cwd=root, env=env, check=True, capture_output=True)
        meta = json.loads(meta_path.read_text())
        bin_ = meta["bin"] if isinstance(meta["bin"], str) else next(iter(meta["bin"].values()))
        lic = meta.get("license") or first_line_license(meta_path.parent / "LICENSE")
        return "node", [str(meta_path.parent / bin_)], meta["version"], lic
    py = root / "venv/bin/python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"{package}=={version}"], check=True, env=env)
    out = subprocess.run([str(py), "-c", PY_META, package], check=True, capture_output=True, text=True).stdout
    meta = json.loads(out)
    lic = meta["license"] or (meta["file"] and first_line_license(Path(meta["file"])))
    return str(root / "venv/bin" / package), [], meta["version"], lic


PY_META = """import importlib.metadata as m, json, sys
d = m.distribution(sys.argv[1]); md = d.metadata
lic = md.get("License-Expression") or (md.get("License") if len(md.get("License") or "") < 30 else None)
cls = {"MIT License": "MIT", "Apache Software License": "Apache-2.0", "ISC License (ISCL)": "ISC"}
lic = lic or next((cls[c.split(" :: ")[-1]] for c in md.get_all("Classifier") or [] if c.split(" :: ")[-1] in cls), None)
f = [str(d.locate_file(p)) for p in d.files if "licenses/" in str(p) or str(p).endswith("LICENSE")]
print(json.dumps({"version": d.version, "license": lic, "file": f[0] if f else None}))"""


async def list_tools(command, args):
    params = StdioServerParameters(command=command, args=args, env={**os.environ, **DUMMY}, cwd=WORK / "home")
    tools, cursor = [], None
    with anyio.fail_after(30), open(WORK / "servers.log", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            while True:
                page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                tools += [t.model_dump(by_alias=True, mode="json") for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    return tools


def spread(items, cap):
    """At most `cap` items, picked evenly over the whole list."""
    return items if len(items) <= cap else [items[i * len(items) // cap] for i in range(cap)]


def main():
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # servers that print banners on stdout
    prepare()
    corpus = []
    for sid, registry, package, version, extra in SERVERS:
        try:
            command, args, exact, lic = install(sid, registry, package, version)
            if not lic or not lic.startswith(LICENSES):
                print(f"skip {package}: license {lic!r}")
                continue
            tools = anyio.run(list_tools, command, args + extra)
        except Exception as e:  # noqa: BLE001 - one broken server must not stop the rest
            print(f"FAILED {package}: {type(e).__name__} {e}"[:300])
            continue
        print(f"{package}@{exact}: {len(tools)} tools")
        for t in spread(tools, CAP):
            corpus.append({"id": sid, "package": package, "registry": registry, "version": exact, "license": lic,
                           "name": t["name"], "description": t.get("description") or "", "inputSchema": t["inputSchema"]})
    counts = {}
    for e in corpus:
        counts[e["name"]] = counts.get(e["name"], 0) + 1
    for e in corpus:
        sid = e.pop("id")
        if counts[e["name"]] > 1:
            e["listedName"], e["name"] = e["name"], f"{sid}__{e['name']}"
    corpus.sort(key=lambda e: (e["package"], e["name"]))
    assert len({e["name"] for e in corpus}) == len(corpus)
    (HERE / "corpus.json").write_text(json.dumps(corpus, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(corpus)} tools from {len({e['package'] for e in corpus})} packages")


if __name__ == "__main__":
    main()
