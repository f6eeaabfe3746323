#!/usr/bin/env bash
# The cost of issue 26's metrics on the hot path: cmd/hummer's BenchmarkWordCount
# (ten copies of the King James Bible, parallelism 1, 8 runs per process) built
# from BASE (a revision without them; default c33e4d7, the last before them) and
# from the work tree, run alternately ROUNDS times, each process's CPU seconds
# (user+sys, from /usr/bin/time) printed. CPU time rather than wall time: on a
# shared machine the wall time of the same run varies by a factor of two.
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
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./cmd/hummer)
go test -c -o "$tmp/new.test" ./cmd/hummer
out=bench/results/metrics_overhead.txt
{
  echo "# bench/metrics_overhead.sh $base $rounds, $(date -u +%Y-%m-%d), $(nproc) cores"
  echo "# binary  cpu_seconds (user+sys of 8 WordCount runs at parallelism 1)"
} > "$out"
for _ in $(seq "$rounds"); do
  for v in base new; do
    dir="$tmp/base/cmd/hummer"
    [ "$v" = new ] && dir=cmd/hummer
    (cd "$dir" && /usr/bin/time -f "$v %U %S" "$tmp/$v.test" -test.run '^$' -test.bench 'WordCount/parallelism=1' \
      -test.benchtime 8x >/dev/null) 2>&1 | awk '{printf "%s %.2f\n", $1, $2 + $3}' >> "$out"
  done
done
awk '!/^#/ {s[$1] += $2; n[$1]++} END {printf "# mean: base %.3f s, new %.3f s, %+.1f%%\n", s["base"]/n["base"], s["new"]/n["new"], 100*(s["new"]/n["new"]/(s["base"]/n["base"]) - 1)}' "$out" >> "$out"
cat "$out"
