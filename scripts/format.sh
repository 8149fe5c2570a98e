#!/usr/bin/env bash
# Formats every C++ source git tracks with the repository's .clang-format (clang-format 14,
# Debian's `clang-format` package), then copies each compiled example region quoted in the docs
# (<!-- snippet: FILE#NAME -->) into its doc block again, so the quotes follow the formatting.
#   scripts/format.sh          format in place
#   scripts/format.sh --check  change nothing; exit 1 naming what is not formatted (CI runs this)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v clang-format >/dev/null || { echo "format: clang-format not found (apt install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if [[ "${1:-}" == --check ]]; then
  if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/durable-format.$$; then
    grep -o '^[^:]*:[0-9]*' /tmp/durable-format.$$ | sort -u -t: -k1,1 | sed 's/^/format: not formatted: /' >&2
    rm -f /tmp/durable-format.$$
    echo "format: run scripts/format.sh and commit the result" >&2
    exit 1
  fi
  rm -f /tmp/durable-format.$$
  echo "format: every C++ source is formatted"
  exit 0
fi
clang-format -i "${files[@]}"
python3 - <<'PY'
import pathlib, re
root = pathlib.Path('.')
def region(path, name):
    lines, out, inside = path.read_text().split('\n'), [], False
    for line in lines:
        if f'// [{name}]' in line:
            if inside: return out
            inside = True
            continue
        if inside: out.append(line)
    raise SystemExit(f'format: no region [{name}] in {path}')
for doc in [root / 'README.md', *sorted((root / 'docs').glob('*.md'))]:
    lines, out, i = doc.read_text().split('\n'), [], 0
    while i < len(lines):
        out.append(lines[i])
        m = re.match(r'<!-- snippet: (.+)#(.+) -->$', lines[i])
        if m:
            out.append(lines[i + 1])  # the opening fence
            j = i + 2
            while not lines[j].startswith('```'): j += 1
            out.extend(region(root / m.group(1), m.group(2)))
            i = j
            continue
        i += 1
    doc.write_text('\n'.join(out))
PY
echo "format: done"
