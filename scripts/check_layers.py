#!/usr/bin/env python3
"""Checks that src/'s includes point one way, down the layers, that libpqxx stays in src/pg/, and
that the public headers include only what a user of the installed headers has.

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
            (through engine/engine_access.hpp)

Public headers (include/durable/*.hpp and include/durable/detail/*.hpp) may include only other
public headers ("durable/..."), the standard library (<name>, no folder) and the third-party
libraries the API already exposes (nlohmann json, fmt, spdlog); never a src/ header. libpqxx only
from durable/pqxx.hpp. A value header (options, filters, records, statuses: VALUES below) never
reaches a facade (a class that does work: FACADES below), directly or through other headers, so a
user can take the values without the machinery. Every public header is in one of VALUES, FACADES
or OTHER, so that a new one is classified when it is added.

Usage: check_layers.py [SRC_DIR [INCLUDE_DIR]]   (exit 1 and one line per violation)
       check_layers.py --self-test FIXTURE_DIR      (FIXTURE_DIR/src and FIXTURE_DIR/include; exit 0
                                                     when exactly the lines marked `// reported` are,
                                                     as often as marked)
"""
import os
import re
import sys

from fixture_marks import marked_lines

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
VALUES = {"audit.hpp", "codec.hpp", "cron.hpp", "engine_options.hpp", "errors.hpp", "ids.hpp", "messages.hpp", "metrics.hpp",
          "options.hpp", "queue_records.hpp", "run_records.hpp", "schedule_records.hpp", "start_options.hpp", "stats.hpp", "status.hpp",
          "versioning.hpp"}
FACADES = {"activity.hpp", "engine.hpp", "handle.hpp", "pqxx.hpp", "queues.hpp", "runs.hpp", "saga.hpp", "schedule.hpp",
           "testing.hpp", "workflow.hpp"}
OTHER = {"durable.hpp", "schema.hpp", "codec_plugin.hpp", "detail/payload.hpp"}  # umbrella, free functions, detail
THIRD_PARTY = ("nlohmann/", "fmt/", "spdlog/")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">]+)[">]', re.M)


def read_includes(top, only=None):
    """{path relative to top: [(line, kind, target)]} for the .hpp/.cpp files under top."""
    files = {}
    for root, _, names in os.walk(top):
        for name in names:
            path = os.path.relpath(os.path.join(root, name), top)
            if name.endswith((".hpp", ".cpp")) and (only is None or only(path)):
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    text = f.read()
                files[path] = [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))
                               for m in INCLUDE.finditer(text)]
    return files


def chain_to(files, start, found, key=lambda target: target):
    """The chain of includes from `start` to a target `found` accepts ([] when none), with the line of its first hop."""
    memo = {}

    def walk(path, seen):
        if path in memo:
            return memo[path]
        result = None
        for line, kind, target in files.get(path, []):
            if found(kind, target):
                result = (line, [f"<{target}>" if kind == "<" else target])
                break
            if key(target) in files and key(target) not in seen:
                sub = walk(key(target), seen | {path})
                if sub:
                    result = (line, [target] + sub[1])
                    break
        memo[path] = result
        return result

    return walk(start, frozenset())


def src_problems(src):
    files = read_includes(src)
    problems = []

    def allowed(layer, target):
        rules = ALLOWED[layer]
        return target.split("/")[0] in rules or target in rules

    for path, includes in sorted(files.items()):
        layer = path.split("/")[0]
        if layer not in ALLOWED:
            problems.append(f"{path}:1: not in a layer folder ({', '.join(ALLOWED)})")
            continue
        for line, kind, target in includes:
            if kind == '"' and target in files and not allowed(layer, target):
                problems.append(f'{path}:{line}: includes "{target}", which layer {layer} may not ({layer} may '
                                f"include {', '.join(sorted(ALLOWED[layer]))})")
    # libpqxx, directly or through any chain of our headers, only under pg/.
    pqxx = lambda kind, target: (kind == "<" and target.startswith("pqxx/")) or target == "durable/pqxx.hpp"
    for path in sorted(files):
        chain = None if path.startswith("pg/") else chain_to(files, path, pqxx)
        if chain:
            problems.append(f"{path}:{chain[0]}: reaches libpqxx through {' -> '.join(chain[1])}; "
                            "keep libpqxx under src/pg/")
    return problems, len(files)


def public_problems(include):
    top = os.path.join(include, "durable")
    files = read_includes(top, lambda path: "/" not in path or path.startswith("detail/"))
    problems = []
    for path, includes in sorted(files.items()):
        shown = f"include/durable/{path}"
        if path not in VALUES | FACADES | OTHER:
            problems.append(f"{shown}:1: a public header that check_layers.py does not know: add it to VALUES "
                            "(options, filters, records, statuses), FACADES (classes that do work) or OTHER")
        for line, kind, target in includes:
            if target.startswith("durable/"):
                if target[len("durable/"):] not in files:
                    problems.append(f"{shown}:{line}: includes {target}, which is not a public header")
            elif target.startswith("pqxx/") and kind == "<":
                if path != "pqxx.hpp":
                    problems.append(f"{shown}:{line}: includes <{target}>: libpqxx only from durable/pqxx.hpp")
            elif kind == "<" and ("/" not in target and "." not in target or target.startswith(THIRD_PARTY)):
                pass  # the standard library, or a library the API already exposes
            else:
                problems.append(f"{shown}:{line}: includes {kind}{target}{'>' if kind == '<' else kind}: a public "
                                "header includes only durable/ headers, the standard library, nlohmann json, fmt "
                                "and spdlog (never a src/ header)")
    # A value header never reaches a facade.
    unprefixed = lambda target: target[len("durable/"):] if target.startswith("durable/") else target
    facade = lambda kind, target: unprefixed(target) in FACADES
    for path in sorted(VALUES & set(files)):
        chain = chain_to(files, path, facade, key=unprefixed)
        if chain:
            problems.append(f"include/durable/{path}:{chain[0]}: a value header reaches the facade "
                            f"{chain[1][-1]} through {' -> '.join(chain[1])}; include the value headers it needs")
    return problems, len(files)


def self_test(fixture):
    """The checker catches what it should: the problems found are those the fixture marks."""
    # A problem under src/ names its path from src/, one under include/ from the fixture.
    expected = marked_lines(fixture, lambda rel: rel.split("/", 1)[1] if rel.startswith("src/") else rel)
    found = src_problems(os.path.join(fixture, "src"))[0] + public_problems(os.path.join(fixture, "include"))[0]
    where = [":".join(p.split(":")[:2]) for p in found]
    if sorted(where) != sorted(expected):
        print(f"expected problems at {sorted(expected)}, found:")
        print("\n".join(found))
        return 1
    print(f"the {len(found)} marked problems were found, and nothing else:")
    print("\n".join(found))
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        return self_test(sys.argv[2])
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "src"))
    include = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(src, "..", "include"))
    problems, src_files = src_problems(src)
    public, public_files = public_problems(include)
    problems += public
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problem(s)")
        return 1
    print(f"layers ok: {src_files} files in src/, {public_files} public headers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
