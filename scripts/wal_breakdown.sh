#!/usr/bin/env bash
# WAL per step, by record type, of one durable-bench throughput measurement: where a step's WAL
# bytes go (heap inserts, index entries, updates that leave their page, ...), to aim at.
#
#   scripts/wal_breakdown.sh [--bench PATH] [--row N]
#
# Runs `durable-bench --only throughput` on a throwaway cluster while sampling the WAL insert
# position and the benchmark's schemas every 0.2 s, then runs pg_waldump --stats=record over the
# WAL the chosen measurement wrote (its schema's lifetime: its set-up, such as queueing the runs,
# is included) and prints records and bytes per step, by record type and then by relation. Rows, in the benchmark's order: 1-4 the
# one-step runs, 5 ten-step on 1 engine queued first (the default), 6 while running, 7-8 on 3
# engines. Build first (`cmake --build build --target durable-bench durable-postgres`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench="$root/build/bench/durable-bench"
row=5
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) bench="$2"; shift 2 ;;
    --row) row="$2"; shift 2 ;;
    *) echo "usage: $0 [--bench PATH] [--row N]" >&2; exit 2 ;;
  esac
done
pg_bin="${DURABLE_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/breakdown.py" <<'PY'
import re, subprocess, sys
samples, row, data, pg_bin, bench_out, relmap = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
rows = [l.rstrip("\n").split("|") for l in open(samples) if l.count("|") == 1]
names = []
for lsn, schemas in rows:
    if schemas and "," not in schemas and (not names or names[-1] != schemas):
        names.append(schemas)
name = names[row]  # names[0] is the raw queue
at = [i for i, r in enumerate(rows) if r[1] == name]
start, end = rows[max(at[0] - 1, 0)][0], rows[min(at[-1] + 1, len(rows) - 1)][0]
table = [l for l in open(bench_out) if re.match(r"^ +(1|10) +[13] +(queued first|while running)", l)]
fields = table[row - 1].split()
steps = int(fields[0]) * int(fields[4])
out = subprocess.run([pg_bin + "/pg_waldump", "-p", data + "/pg_wal", "--start=" + start, "--end=" + end,
                      "--stats=record"], capture_output=True, text=True, check=True).stdout
stats = []
for line in out.splitlines():
    m = re.match(r"^(\S+)\s+(\d+) \(\s*[\d.]+\)\s+(\d+) \(\s*[\d.]+\)\s+(\d+) \(\s*[\d.]+\)\s+(\d+)", line)
    if m:
        stats.append((int(m.group(5)), int(m.group(2)), m.group(1)))
print(f"measurement {row}: {table[row - 1].strip()}")
print(f"WAL {start} .. {end} of schema {name}, {steps} steps (set-up included)")
print(f"{'record':32}{'per step':>10}{'bytes/step':>12}")
for size, count, kind in sorted(stats, reverse=True):
    print(f"{kind:32}{count / steps:10.2f}{size / steps:12.1f}")
print(f"{'total':32}{'':10}{sum(s for s, _, _ in stats) / steps:12.1f}")
# The same WAL by relation (the first block a record touches) and record type.
names_of = {}
for line in open(relmap):
    if line.count("|") == 2:
        schema, node, rel = line.rstrip("\n").split("|")
        if schema == name:
            names_of[node] = rel.removeprefix(name + ".")
        else:
            names_of.setdefault(node, rel)
records = subprocess.run([pg_bin + "/pg_waldump", "-p", data + "/pg_wal", "--start=" + start, "--end=" + end],
                         capture_output=True, text=True, check=True).stdout
by_rel = {}
for line in records.splitlines():
    m = re.match(r"^rmgr: (\S+)\s+len \(rec/tot\):\s*\d+/\s*(\d+),.*desc: (\S+)", line)
    if not m:
        continue
    rel = re.search(r"blkref #0: rel \d+/\d+/(\d+)", line)
    relname = names_of.get(rel.group(1), "(other)") if rel else "(none)"
    key = (relname, m.group(1) + "/" + m.group(3))
    count, size = by_rel.get(key, (0, 0))
    by_rel[key] = (count + 1, size + int(m.group(2)))
print()
print(f"{'relation':36}{'record':26}{'per step':>10}{'bytes/step':>12}")
for (relname, kind), (count, size) in sorted(by_rel.items(), key=lambda kv: -kv[1][1])[:40]:
    print(f"{relname:36}{kind:26}{count / steps:10.2f}{size / steps:12.1f}")
PY
cat > "$work/inner.sh" <<'SH'
set -euo pipefail
sample() {
  while true; do
    psql "$DURABLE_DATABASE_URL" -Atc "SELECT pg_current_wal_insert_lsn(), coalesce((SELECT string_agg(nspname, ',')
      FROM pg_namespace WHERE nspname LIKE 'bench%'), '')" 2>/dev/null || true
    # Toast relations are named by the table they hold values of; relations outside the schema by their own schema.
    psql "$DURABLE_DATABASE_URL" -Atc "SELECT coalesce(on_n.nspname, n.nspname), c.relfilenode,
      coalesce('toast of ' || owner.relname, n.nspname || '.' || c.relname) FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_class owner ON owner.reltoastrelid = c.oid OR owner.reltoastrelid = (SELECT indrelid FROM pg_index WHERE indexrelid = c.oid)
      LEFT JOIN pg_namespace on_n ON on_n.oid = owner.relnamespace WHERE c.relfilenode <> 0" \
      >> "$WORK/relmap" 2>/dev/null || true
    sleep 0.2
  done
}
sample > "$WORK/samples" &
sampler=$!
"$BENCH" --only throughput > "$WORK/bench.out" 2> "$WORK/bench.err"
kill $sampler
python3 "$WORK/breakdown.py" "$WORK/samples" "$ROW" "$(psql "$DURABLE_DATABASE_URL" -Atc "SHOW data_directory")" \
  "$PG_BIN" "$WORK/bench.out" "$WORK/relmap"
SH
export BENCH="$bench" ROW="$row" WORK="$work" PG_BIN="$pg_bin"
env -u DURABLE_DATABASE_URL "$root/build/tools/durable-postgres" -- bash "$work/inner.sh"
