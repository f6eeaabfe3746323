#!/usr/bin/env bash
# The cost of issue 26's metrics on the hot path, built from BASE (a revision
# without them; default c33e4d7, the last before them) and from the work tree,
# run alternately ROUNDS times, each process's CPU seconds (user+sys, from
# /usr/bin/time) printed: cmd/hummer's BenchmarkWordCount (ten copies of the
# King James Bible, parallelism 1, 8 runs per process), and Nexmark q0's scan
# (`hummer sql`: a count over q0's projection of 16 million events' bids, as
# fast as they generate). CPU time rather than wall time: on a shared machine
# the wall time of the same run varies by a factor of two.
# Usage: bench/metrics_overhead.sh [BASE] [ROUNDS]; writes results/metrics_overhead.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-c33e4d7}
rounds=${2:-8}
export GOFLAGS=-tags=grpcnotrace,arrow_json_stdlib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/base"
git archive "$base" | tar -x -C "$tmp/base"
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./cmd/hummer && go build -o "$tmp/base.bin" ./cmd/hummer)
go test -c -o "$tmp/new.test" ./cmd/hummer
go build -o "$tmp/new.bin" ./cmd/hummer
q0="CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP, extra TEXT) ENGINE=nexmark CONNECTION='nexmark://bid?events=16000000&rate=0';
SELECT COUNT(*) FROM (SELECT auction, bidder, price, dateTime, extra FROM bid) AS q0;"
out=bench/results/metrics_overhead.txt
{
  echo "# bench/metrics_overhead.sh $base $rounds, $(date -u +%Y-%m-%d), $(nproc) cores"
  echo "# suite binary cpu_seconds (user+sys of the process)"
} > "$out"
for _ in $(seq "$rounds"); do
  for v in base new; do
    dir="$tmp/base/cmd/hummer"
    [ "$v" = new ] && dir=cmd/hummer
    (cd "$dir" && /usr/bin/time -f "wordcount $v %U %S" "$tmp/$v.test" -test.run '^$' -test.bench 'WordCount/parallelism=1' \
      -test.benchtime 8x >/dev/null) 2>&1 | awk '{printf "%s %s %.2f\n", $1, $2, $3 + $4}' >> "$out"
    rm -rf "$tmp/data"
    (/usr/bin/time -f "nexmark-q0 $v %U %S" "$tmp/$v.bin" sql --data-dir "$tmp/data" -e "$q0" >/dev/null) 2>&1 |
      awk '{printf "%s %s %.2f\n", $1, $2, $3 + $4}' >> "$out"
  done
done
awk '!/^#/ {s[$1" "$2] += $3; n[$1" "$2]++; suites[$1] = 1}
  END {for (q in suites) printf "# %s mean: base %.3f s, new %.3f s, %+.1f%%\n", q, s[q" base"]/n[q" base"], s[q" new"]/n[q" new"],
    100*(s[q" new"]/n[q" new"]/(s[q" base"]/n[q" base"]) - 1)}' "$out" >> "$out"
cat "$out"
