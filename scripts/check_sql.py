#!/usr/bin/env python3
"""Checks that no SQL statement text is built from a value, and that every statement is a file.

DESIGN.md: every value is a bound parameter. The statements live in src/pg/sql/ (one per file,
prepared by name); this script fails on what would slip past that:
  * a call of libpqxx's exec, exec0, exec1, exec_n or exec_params* whose statement is not a string
    literal (fmt::format, a variable, literal + value), unless a comment `// built SQL: <why>` on
    one of the three lines above says why no value is in it (DDL naming the schema, which is an
    identifier checked by validate_schema_name, takes no parameters);
  * any quote(), quote_name() or esc() of a transaction or connection: quoting a value into text;
  * prepare() outside src/pg/statements.cpp, which prepares the files' texts;
  * a stmt:: name in src/pg/statements.hpp without its file in src/pg/sql/, or a file there
    (fragments/ aside) that no stmt:: name prepares.
Usage: check_sql.py [SRC_DIR]   (exit 1 and one line per problem)
       check_sql.py --self-test FIXTURE_DIR   (exit 0 when exactly the lines marked `// reported`
                                               in the fixture's files are reported, as often as marked)
"""
import os
import re
import sys

from fixture_marks import marked_lines

CALL = re.compile(r"(?:\.|->)(exec|exec0|exec1|exec_n|exec_params|exec_params0|exec_params1|exec_params_n)\s*\(")
QUOTING = re.compile(r"(?:\.|->)(quote|quote_name|esc)\s*\(")
PREPARE = re.compile(r"\.prepare\s*\(")
MARK = "// built SQL:"


def literal_end(text, at):
    """End of the string literal at `at` (just past its closing quote), or None if none is there."""
    m = re.match(r'R"([^()\\ ]{0,16})\(', text[at:])
    if m:
        close = text.find(")" + m.group(1) + '"', at + m.end())
        return None if close < 0 else close + len(m.group(1)) + 2
    if text.startswith('"', at):
        i = at + 1
        while i < len(text) and text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        return i + 1
    return None


def statement_is_literal(text, at):
    """Whether the first argument starting at `at` is string literals only (adjacent ones join)."""
    i, found = at, False
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        end = literal_end(text, i)
        if end is None:
            break
        found, i = True, end
    return found and i < len(text) and text[i] in ",)"


def check_calls(path, rel, problems):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    for m in CALL.finditer(text):
        line = text.count("\n", 0, m.start())
        if statement_is_literal(text, m.end()):
            continue
        if any(MARK in lines[k] for k in range(max(0, line - 3), line + 1)):
            continue
        problems.append(f"{rel}:{line + 1}: {m.group(1)}() of a statement built at run time: put it in "
                        f"src/pg/sql/ and bind its values as $n (or say `{MARK} why` if it is DDL of identifiers)")
    for m in QUOTING.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        problems.append(f"{rel}:{line}: {m.group(1)}() quotes a value into SQL text: bind it as $n instead")
    if rel != os.path.join("pg", "statements.cpp"):
        for m in PREPARE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{rel}:{line}: prepare() outside pg/statements.cpp: statements are files in src/pg/sql/")


def check_names(src, problems):
    header = os.path.join(src, "pg", "statements.hpp")
    if not os.path.exists(header):
        return
    with open(header, encoding="utf-8") as f:
        names = set(re.findall(r'inline constexpr const char\* \w+ = "([^"]+)";', f.read()))
    sql = os.path.join(src, "pg", "sql")
    files = set()
    for root, _, entries in os.walk(sql):
        for entry in entries:
            if entry.endswith(".sql"):
                name = os.path.relpath(os.path.join(root, entry), sql)[: -len(".sql")]
                if not name.startswith("fragments" + os.sep):
                    files.add(name.replace(os.sep, "/"))
    for name in sorted(names - files):
        problems.append(f"pg/statements.hpp: statement '{name}' has no file src/pg/sql/{name}.sql")
    for name in sorted(files - names):
        problems.append(f"pg/sql/{name}.sql: no stmt:: name in pg/statements.hpp prepares it")


def problems_in(src):
    problems = []
    for root, _, names in os.walk(src):
        for name in sorted(names):
            if name.endswith((".hpp", ".cpp")):
                path = os.path.join(root, name)
                check_calls(path, os.path.relpath(path, src), problems)
    check_names(src, problems)
    return problems


def self_test(fixture):
    """The checker catches what it should: the problems found are those the fixture marks."""
    expected = marked_lines(fixture)
    found = [":".join(p.split(":")[:2]) for p in problems_in(fixture)]
    if sorted(found) != sorted(expected):
        print(f"expected problems at {sorted(expected)}, found {sorted(found)}")
        return 1
    print(f"the {len(found)} marked problems were found, and nothing else")
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        return self_test(sys.argv[2])
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src"))
    problems = problems_in(src)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
