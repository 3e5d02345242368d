"""Checks queries.json against corpus.json: every expected tool exists, and no "paraphrase" query
shares a word with its expected tools' names, descriptions or parameters (names, titles,
descriptions, enum values, at any depth). Words are compared lowercased, names split on _ - and
camelCase, text on non-alphanumerics; a few stopwords are ignored. Prints offenders; exits 1 if any.
"""

import json, re, sys
from pathlib import Path

HERE = Path(__file__).parent
STOP = set("a an the of to in on for is it my me i what how do does can with and or at by from this that be are "
           "was there any all some get please".split())


def words(text):
    """Lowercase words of `text`; camelCase and snake_case pieces count as words too."""
    out = set()
    for token in re.findall(r"[A-Za-z0-9]+", text):
        out.add(token.lower())
        out.update(p.lower() for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", token))
    return out - STOP


def schema_text(node):
    """Parameter names, titles, descriptions and enum values anywhere in a JSON schema."""
    if isinstance(node, dict):
        parts = [str(v) for k, v in node.items() if k in ("title", "description") and isinstance(v, str)]
        if isinstance(node.get("enum"), list):
            parts += [str(v) for v in node["enum"]]
        if isinstance(node.get("properties"), dict):
            parts += list(node["properties"])
        return " ".join(parts + [schema_text(v) for v in node.values()])
    if isinstance(node, list):
        return " ".join(schema_text(v) for v in node)
    return ""


def tool_words(tool):
    return words(" ".join([tool["name"], tool.get("listedName", ""), tool["description"], schema_text(tool["inputSchema"])]))


def main():
    corpus = {t["name"]: t for t in json.loads((HERE / "corpus.json").read_text())}
    queries = json.loads((HERE / "queries.json").read_text())
    bad = 0
    for q in queries:
        missing = [name for name in q["expect"] if name not in corpus]
        if missing or not q["expect"] or q["kind"] not in ("keyword", "paraphrase"):
            bad += 1
            print(f"BAD {q['query']!r}: unknown {missing} or kind {q['kind']!r}")
            continue
        if q["kind"] == "paraphrase":
            shared = words(q["query"]) & set().union(*(tool_words(corpus[n]) for n in q["expect"]))
            if shared:
                bad += 1
                print(f"SHARED {q['query']!r}: {sorted(shared)}")
    kinds = {k: sum(q["kind"] == k for q in queries) for k in ("keyword", "paraphrase")}
    packages = {corpus[n]["package"] for q in queries for n in q["expect"] if n in corpus}
    print(f"{len(queries)} queries {kinds}, over {len(packages)} packages, {bad} offenders")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
