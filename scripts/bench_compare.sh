#!/usr/bin/env bash
# Compares Google Benchmark executables (two builds of one bench, say) on a machine that other work shares.
# Runs every LABEL=BINARY once per round, in a rotating order (round i starts with the i-th side, so no side
# always runs first or right after another), then prints, per benchmark and counter, each side's median
# [min..max] over the rounds and, against the first side, the median per-round difference and in how many
# rounds the side was slower (higher).
#
# Give the baseline twice (before=… before2=<a copy>) for an A/A control: a difference no larger than the
# one between the two copies is noise. With permission (root), the benchmarks run at real-time priority
# (chrt -f 10), which shields them from the builds sharing the cores; they mostly wait, and the kernel's
# real-time throttling (kernel.sched_rt_runtime_us) bounds what they can take from others. --no-rt runs them
# as ordinary processes.
#
# Usage: scripts/bench_compare.sh [--rounds N] [--filter REGEX] [--counters a,b,...] [--out DIR] [--no-rt]
#          LABEL=BINARY LABEL=BINARY...
# Example: scripts/bench_compare.sh --filter tool_loop:0 --counters ack_p50_us,ack_p99_us \
#            before=/tmp/a/steer_ack_bench before2=/tmp/a2/steer_ack_bench after=build/bench/steer_ack_bench
set -euo pipefail

rounds=10
filter=.
counters=real_time,cpu_time
out=""
rt=1
sides=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --counters) counters=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-rt) rt=0; shift ;;
    *=*) sides+=("$1"); shift ;;
    *) echo "scripts/bench_compare.sh: unexpected argument '$1' (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
if [ ${#sides[@]} -lt 2 ]; then
  echo "scripts/bench_compare.sh: give at least two LABEL=BINARY sides" >&2
  exit 2
fi
for side in "${sides[@]}"; do
  if [ ! -x "${side#*=}" ]; then
    echo "scripts/bench_compare.sh: ${side#*=} is not an executable" >&2
    exit 2
  fi
done
[ -n "$out" ] || out=$(mktemp -d /tmp/bench_compare.XXXXXX)
mkdir -p "$out"
prefix=()
if [ "$rt" = 1 ] && command -v chrt > /dev/null && chrt -f 10 true 2> /dev/null; then prefix=(chrt -f 10); fi
echo "runs in $out; ${prefix[*]:-ordinary priority}; $rounds rounds of ${#sides[@]} sides" >&2

n=${#sides[@]}
for ((i = 1; i <= rounds; i++)); do
  for ((k = 0; k < n; k++)); do
    side=${sides[$(((i + k) % n))]}
    label=${side%%=*}
    "${prefix[@]}" "${side#*=}" --benchmark_filter="$filter" --benchmark_out="$out/$label.$i.csv" \
      --benchmark_out_format=csv > /dev/null 2> "$out/$label.$i.log" ||
      echo "scripts/bench_compare.sh: $label round $i failed; see $out/$label.$i.log" >&2
  done
  echo "round $i/$rounds done" >&2
done

# One line per value: benchmark, counter, label, round, value (the CSV's header names the columns; its
# benchmark names hold no commas).
for side in "${sides[@]}"; do
  label=${side%%=*}
  for ((i = 1; i <= rounds; i++)); do
    [ -f "$out/$label.$i.csv" ] || continue
    awk -F, -v label="$label" -v round="$i" -v wanted="$counters" '
      BEGIN { split(wanted, list, ","); for (c in list) want[list[c]] = 1 }
      /^name,/ { for (c = 1; c <= NF; c++) { h = $c; gsub(/"/, "", h); col[c] = h }; header = 1; next }
      header && NF > 1 {
        name = $1; gsub(/"/, "", name)
        for (c = 2; c <= NF; c++) if ((col[c] in want) && $c != "") print name "\t" col[c] "\t" label "\t" round "\t" $c
      }' "$out/$label.$i.csv"
  done
done > "$out/values.tsv"

labels=$(printf '%s\n' "${sides[@]}" | sed 's/=.*//' | paste -sd, -)
sort -t$'\t' -k1,1 -k2,2 "$out/values.tsv" | awk -F'\t' -v labels="$labels" '
  function median(a, m,   s, i, j, t) {
    for (i = 1; i <= m; i++) s[i] = a[i]
    for (i = 2; i <= m; i++) for (j = i; j > 1 && s[j - 1] > s[j]; j--) { t = s[j]; s[j] = s[j - 1]; s[j - 1] = t }
    return m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
  }
  function report(   l, r, m, lo, hi, a, d, slower, base, k) {
    if (key == "") return
    printf "%s  %s\n", bench, counter
    base = order[1]
    for (l = 1; l <= nl; l++) {
      m = 0; lo = ""; hi = ""; delete a
      for (r in v) { split(r, k, SUBSEP); if (k[1] != order[l]) continue
        a[++m] = v[r]; if (lo == "" || v[r] < lo) lo = v[r]; if (hi == "" || v[r] > hi) hi = v[r] }
      if (m == 0) continue
      printf "  %-10s median %10.4g  [%.4g .. %.4g]  n=%d", order[l], median(a, m), lo, hi, m
      if (l > 1) {
        m = 0; slower = 0; delete d
        for (r in v) { split(r, k, SUBSEP); if (k[1] != order[l] || !((base, k[2]) in v)) continue
          d[++m] = v[r] - v[base, k[2]]; slower += d[m] > 0 }
        if (m > 0) printf "   vs %s: median diff %+.4g, higher in %d/%d rounds", base, median(d, m), slower, m
      }
      printf "\n"
    }
    delete v
  }
  BEGIN { nl = split(labels, order, ",") }
  { if ($1 "\t" $2 != key) { report(); key = $1 "\t" $2; bench = $1; counter = $2 }; v[$3, $4] = $5 }
  END { report() }'
