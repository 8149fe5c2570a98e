#!/usr/bin/env python3
"""Reports every C++ function over 80 lines and every C++ file over 500 lines (issue 36, "Sizes").

Usage: check_sizes.py [--function-lines N] [--file-lines N] [DIR_OR_FILE ...]
  (default: tools/ and bench/ of this repository). Prints one line per problem,
    path:line: function NAME is N lines (limit 80)
    path:1: file is N lines (limit 500)
  and exits 1 when there is any, else 0.

How it finds functions (a heuristic, not a C++ parser):
  1. Comments, string and character literals (raw strings too; a digit separator is not a quote)
     and preprocessor lines are blanked out, keeping every newline, so that braces in them do
     not count and line numbers stay right.
  2. The braces are matched. A `{` inside parentheses (a lambda or a braced value passed as an
     argument, a default argument `= {}`) belongs to what holds it and is passed over. For each
     other `{` at namespace or class scope, the text since the last `;`, `{` or `}` (its head)
     says what it opens:
       - `namespace ...` or `extern "C"`: looked into, as the file is;
       - a head ending in `class`, `struct` or `union Name [final] [: bases]` (after a macro
         call without a semicolon, say): looked into, for member functions defined in the class;
       - a head with `=` outside parentheses (a variable's initializer, a lambda in a variable):
         passed over;
       - a head ending in `)` (then perhaps const, noexcept, override, final, &, &&, `-> T`,
         `try`), or a constructor's `) : member(...), member{...}` initializer list: a function.
         Its body is the brace group, with the `catch` handlers of a function-try-block, and
         everything in it (lambdas, local classes) is part of it. A brace-initialized member of
         the initializer list is passed over to find the body;
       - anything else (an enum, a member's `{}`, an array's values): passed over.
     A macro such as TEST_CASE("...") { ... } counts as a function of that name.
  3. A function's length counts from the first line of its head (its signature, with a
     `template <...>` line above it) to the line of its closing brace, both included.
A file's length is its number of lines.
"""
import argparse
import os
import re
import sys

SOURCE_ENDINGS = (".cpp", ".hpp", ".h", ".cc", ".hh", ".cxx")
QUALIFIERS = re.compile(
    r"(\s*(\bconst\b|\bnoexcept\b(\s*\([^()]*\))?|\boverride\b|\bfinal\b|\bmutable\b|\btry\b|&&|&|"
    r"->\s*[\w:<>,\s*&]+?))*\s*$")
ACCESS_LABEL = re.compile(r"^\s*((public|private|protected)\s*:(?!:)\s*)+")
TEMPLATE = re.compile(r"^\s*template\s*<")
# `struct Name`, `class Name final : public Base<T>` at the end of a head (after a macro call
# without a semicolon, say).
CLASS_HEAD = re.compile(r"(^|[\s;)])(class|struct|union)\s+(alignas\s*\([^()]*\)\s*)?[\w:<>]+(\s+final)?(\s*:[^(){};]*)?$")


def blank_out(text):
    """`text` with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True  # only white space since the last newline: a '#' opens a directive
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            i += 1
            line_start = True
            continue
        if line_start and c == "#":  # a directive, with its continuation lines
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r'R"([^ ()\\\t\n]{0,16})\(', text[i:i + 20]) if c == "R" and not _in_word(text, i) else None
        if raw:
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:end]))
            i = end
            continue
        if c == '"' or (c == "'" and not _is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else c)
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _in_word(text, i):
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_") and not re.search(r"\b(u8|u|U|L)$", text[:i])


def _is_digit_separator(text, i):
    """A ' inside a number (10'000), not a character literal."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_'."):
        j -= 1
    return j < i and text[j].isdigit()


def matching(code, open_at):
    """The index of the brace closing the one at `open_at`."""
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def strip_template(head):
    """`head` without a leading `template <...>`."""
    while TEMPLATE.match(head):
        depth = 0
        for k in range(head.index("<"), len(head)):
            depth += {"<": 1, ">": -1}.get(head[k], 0)
            if depth == 0:
                break
        head = head[k + 1:]
    return head.strip()


def function_name(signature):
    """The (qualified) name before the parameter list that `signature` ends with, or None."""
    end = len(signature) - 1
    if end < 0 or signature[end] != ")":
        return None
    depth = 0
    for k in range(end, -1, -1):
        depth += {")": 1, "(": -1}.get(signature[k], 0)
        if depth == 0:
            break
    before = signature[:k].rstrip()
    op = re.search(r"((?:[\w~]+\s*::\s*)*operator\s*(?:\(\s*\)|\[\s*\]|[^\w\s()]+|[\w\s:<>*&]+?))$", before)
    if op:
        return re.sub(r"\s+", " ", op.group(1)).strip()
    name = re.search(r"([\w~]+(?:\s*::\s*[\w~]+)*)$", before)
    if not name or name.group(1) in ("if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"):
        return None
    return re.sub(r"\s+", "", name.group(1))


def has_top_level_assignment(head):
    """An `=` outside parentheses that is no comparison and no operator's name: a variable's head."""
    depth = 0
    for k, c in enumerate(head):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "=" and depth == 0:
            around = head[max(0, k - 10):k + 2]
            if not re.search(r"operator\s*[=!<>+\-*/%&|^]*=", around) and head[k + 1:k + 2] != "=" and \
                    head[k - 1:k] not in ("=", "!", "<", ">"):
                return True
    return False


def paren_depth(text):
    """How many parentheses `text` leaves open."""
    return text.count("(") - text.count(")")


def classify(head):
    """('scope' | 'function' | 'init' | 'skip', name) for the brace group `head` opens."""
    head = strip_template(ACCESS_LABEL.sub("", head).strip())
    if re.match(r"^(inline\s+)?namespace\b", head) or re.match(r'^extern\s*"\s*"$', head):
        return "scope", None
    if CLASS_HEAD.search(head):
        return "scope", None
    if has_top_level_assignment(head):
        return "skip", None
    init = re.search(r"\)\s*(noexcept\s*)?:(?!:)", head)
    if init:  # a constructor's initializer list: the signature ends where it starts
        name = function_name(head[:init.start() + 1].rstrip())
        return ("init", name) if name else ("skip", None)
    signature = QUALIFIERS.sub("", head) if not head.endswith(")") else head
    name = function_name(signature.rstrip())
    return ("function", name) if name else ("skip", None)


def functions(code):
    """(name, first line, last line) of each function defined at namespace or class scope."""
    found = []

    def scan(start, stop):
        head_start = start
        k = start
        while k < stop:
            c = code[k]
            if c in ";}":
                head_start = k + 1
            elif c == "{" and paren_depth(code[head_start:k]) > 0:  # a lambda or braced value in an argument
                k = matching(code, k)
            elif c == "{":
                kind, name = classify(code[head_start:k])
                close = matching(code, k)
                if kind == "init":  # pass over `member{...}` initializers to the body
                    while re.search(r"[\w>]\s*$", code[head_start:k]) and re.match(r"\s*[,{]", code[close + 1:]):
                        k = code.index("{", close + 1)
                        close = matching(code, k)
                    kind = "function"
                if kind == "function":
                    while re.match(r"\s*catch\b", code[close + 1:]):  # a function-try-block's handlers
                        close = matching(code, code.index("{", close + 1))
                    first = head_start + len(code[head_start:k]) - len(code[head_start:k].lstrip())
                    first += len(ACCESS_LABEL.match(code[first:k]).group(0)) if ACCESS_LABEL.match(code[first:k]) else 0
                    found.append((name, code.count("\n", 0, first) + 1, code.count("\n", 0, close) + 1))
                elif kind == "scope":
                    scan(k + 1, close)
                k = close
                head_start = k + 1
            k += 1

    scan(0, len(code))
    return found


def sources(paths):
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for root, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                if name.endswith(SOURCE_ENDINGS):
                    yield os.path.join(root, name)


def main():
    here = os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    here = "" if here == "." else here
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", default=[os.path.join(here, "tools"), os.path.join(here, "bench")])
    parser.add_argument("--function-lines", type=int, default=80, help="longest function allowed (default 80)")
    parser.add_argument("--file-lines", type=int, default=500, help="longest file allowed (default 500)")
    args = parser.parse_args()
    missing = [path for path in args.paths if not os.path.exists(path)]
    if missing:
        parser.error(f"no such file or folder: {', '.join(missing)}")
    problems = 0
    for path in sources(args.paths):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > args.file_lines:
            print(f"{path}:1: file is {lines} lines (limit {args.file_lines})")
            problems += 1
        for name, first, last in functions(blank_out(text)):
            if last - first + 1 > args.function_lines:
                print(f"{path}:{first}: function {name} is {last - first + 1} lines (limit {args.function_lines})")
                problems += 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
