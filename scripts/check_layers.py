#!/usr/bin/env python3
"""Checks that src/'s includes point one way, down the layers, and that libpqxx stays in src/pg/.

Layers, bottom up (a folder may include its own headers, the public headers under include/, and
those of the folders listed for it):
  base      shared vocabulary: errors, options, payloads, logging, the registry
  journal   the journal's vocabulary: each event kind's data and its one JSON form, run statuses
  pg        storage: the only layer that sees libpqxx
  schedule  pure calendar arithmetic
  replay    pure decisions: journal + workflow code -> what to commit (pg/records.hpp only of pg)
  pipeline  claim -> run -> outcome -> commit -> launch
  background the loops beside the step path: sweeps, retention, presence, schedules
  engine    the facade behind the public API
  testing   the test kit (its own library), on top: replay checks read the engine's registry
Usage: check_layers.py [SRC_DIR]   (exit 1 and one line per violation)
"""
import os
import re
import sys

ALLOWED = {
    "base": {"base"},
    "journal": {"base", "journal"},
    "pg": {"base", "journal", "pg"},
    "schedule": {"base", "schedule"},
    "replay": {"base", "journal", "schedule", "replay", "pg/records.hpp"},
    "pipeline": {"base", "journal", "pg", "schedule", "replay", "pipeline"},
    "background": {"base", "journal", "pg", "schedule", "background"},
    "engine": {"base", "journal", "pg", "schedule", "replay", "pipeline", "background", "engine"},
    "testing": {"base", "journal", "pg", "replay", "engine", "testing"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src"))
    headers = {}  # path relative to src -> its includes [(kind, target)]
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith((".hpp", ".cpp")):
                path = os.path.relpath(os.path.join(root, name), src)
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    headers[path] = INCLUDE.findall(f.read())
    problems = []

    def allowed(layer, target):
        rules = ALLOWED[layer]
        return target.split("/")[0] in rules or target in rules

    for path, includes in sorted(headers.items()):
        layer = path.split("/")[0]
        if layer not in ALLOWED:
            problems.append(f"{path}: not in a layer folder ({', '.join(ALLOWED)})")
            continue
        for kind, target in includes:
            if kind == '"' and target in headers and not allowed(layer, target):
                problems.append(f'{path}: includes "{target}", which layer {layer} may not ({layer} may include '
                                f"{', '.join(sorted(ALLOWED[layer]))})")

    # libpqxx, directly or through any chain of our headers, only under pg/.
    reaches = {}

    def reaches_pqxx(path, seen=()):
        if path in reaches:
            return reaches[path]
        if path in seen:
            return None
        found = None
        for kind, target in headers.get(path, []):
            if (kind == "<" and target.startswith("pqxx/")) or target == "durable/pqxx.hpp":
                found = [f"<{target}>"]
                break
            if kind == '"' and target in headers:
                chain = reaches_pqxx(target, seen + (path,))
                if chain:
                    found = [target] + chain
                    break
        reaches[path] = found
        return found

    for path in sorted(headers):
        if path.startswith("pg/"):
            continue
        chain = reaches_pqxx(path)
        if chain:
            problems.append(f"{path}: reaches libpqxx through {' -> '.join(chain)}; keep libpqxx under src/pg/")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problem(s)")
        return 1
    print(f"layers ok: {len(headers)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
