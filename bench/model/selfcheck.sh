#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Checks the hardware cost model (bench/model/costs.tsv, model.awk) without a
# guest: the table's rows are complete and cited, and the model computed on
# the fixture (the counts of 6.1 x86-64 workloads 2, 3 and 6 as measured,
# bench/README.md "Counts measured") gives the figures worked out by hand and
# the table bench/README.md shows, and the copying mover's decision
# (copy-tables.awk on its fixture) the figures the README gives. Seconds; prints TAP, the last line
# "N passed, N failed, N skipped".
# Usage: bench/model/selfcheck.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/harness/tap.sh
. "$top/tests/harness/tap.sh"

costs=$here/costs.tsv
fixture=$here/fixture-6.1.0-57-amd64.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

model() { # model FMT CSV
	awk -F, -v fmt="$1" -f "$here/model.awk" "$costs" "$2"
}

# The table: seven fields, low <= high, a URL or "no public figure found".
bad=$(awk -F'\t' '!/^#/ && $1 != "class" && (NF != 7 || $4 + 0 > $5 + 0 ||
	$7 !~ /(https?:\/\/|^no public figure found)/) { print FNR ": " $0 }' "$costs")
tap_ok "$([ -z "$bad" ] && echo 1)" "every row of costs.tsv: 7 fields, low <= high, cited or marked uncited" "$bad" || true

# Every CPU has every class the model reads for its architecture.
missing=$(awk -F'\t' '
	!/^#/ && $1 != "class" { have[$2, $1] = 1; arch[$2] = $3 }
	END {
		split("clock cpi load store atomic load_dram ipi", common, " ")
		x86 = "tlbi_invlpg tlbi_cr3 tlbi_invpcid"
		a64 = "tlbi_va tlbi_range tlbi_asid"
		for (c in arch) {
			n = split(arch[c] == "arm64" ? a64 : x86, own, " ")
			for (i = 1; i <= n; i++)
				if (!((c, own[i]) in have))
					print c ": " own[i]
			for (i in common)
				if (!((c, common[i]) in have))
					print c ": " common[i]
		}
	}' "$costs")
tap_ok "$([ -z "$missing" ] && echo 1)" "every CPU has every cost class of its architecture" "$missing" || true

ncpu() { # ncpu ARCH: the CPUs of ARCH in the table
	awk -F'\t' -v a="$1" '!/^#/ && $3 == a { c[$2] = 1 } END { print length(c) }' "$costs"
}
x86=$(ncpu amd64)
arm=$(ncpu arm64)
tap_ok "$([ "$x86" -ge 2 ] && [ "$arm" -ge 1 ] && echo 1)" \
	"the table names at least two x86-64 CPUs ($x86) and an arm64 one ($arm)" || true

model text "$fixture" >"$tmp/text"
rows=$(grep -c '^[0-9]' "$tmp/text" || true)
tap_ok "$([ "$rows" = $((3 * x86)) ] && ! grep -q neoverse "$tmp/text" && echo 1)" \
	"the fixture (x86-64): a row per workload and x86-64 CPU ($rows), none for arm64's" "$(cat "$tmp/text")" || true
tap_ok "$(grep -q 'a model, not a measurement' "$tmp/text" && echo 1)" "the output says it is a model" || true

# Worked by hand from costs.tsv and the fixture, Sapphire Rapids, 3_pte:
#   fastremap low:  (326 + 11,115,674) insns * 0.25 + 267,580 atomics * 17
#                   + 2 CR3 writes * 200 = 7,328,260 cycles / 3.8 GHz = 1,928 us
#   fastremap high: 11,116,000 * 1.0 + 267,580 * 20 + 1,443,888 loads * 5
#                   + 2,829,037 stores * 1 + 2 * 2000 = 26,520,077 cycles / 2.0 GHz
#                   + 262,144 / 8 lines * 240 ns = 21,124 us
#   mremap(2) low:  (50 + 12,582,777) * 0.25 + 268,660 * 17 + 513 CR3 writes * 200
#                   + 512 INVLPG * 80 = 7,856,487 cycles / 3.8 GHz = 2,067 us
# (the second check recomputes that one from the formula).
line=$(grep '^3_pte .*sapphire-rapids' "$tmp/text" || true)
tap_ok "$(echo "$line" | grep -q ' 1928-21124 ' && echo 1)" \
	"3_pte, Sapphire Rapids: fastremap 1928-21124 us, as worked by hand" "$line" || true
mr=$(awk 'BEGIN { printf "%.0f", (12582777 + 50) * 0.25 + 268660 * 17 + 513 * 200 + 512 * 80 }')
mrus=$(awk -v c="$mr" 'BEGIN { printf "%.0f", c / 3.8 / 1000 }')
tap_ok "$(echo "$line" | grep -q " $mrus-" && echo 1)" \
	"3_pte, Sapphire Rapids: mremap(2)'s low bound $mrus us ($mr cycles at 3.8 GHz)" "$line" || true

# Positive control of the architecture choice: the same counts as an arm64
# kernel's are modelled on the arm64 CPUs only.
sed '2,$s/^6\.1\.0-57-amd64,/6.1.0-57-arm64,/' "$fixture" >"$tmp/arm64.csv"
model text "$tmp/arm64.csv" >"$tmp/arm"
arows=$(grep -c '^[0-9]' "$tmp/arm" || true)
tap_ok "$([ "$arows" = $((3 * arm)) ] && grep -q neoverse "$tmp/arm" && ! grep -q zen3 "$tmp/arm" && echo 1)" \
	"an arm64 kernel's counts: modelled on the arm64 CPUs only ($arows rows)" "$(cat "$tmp/arm")" || true

# A CSV without counts (a plain run): no model, no output.
model text "$top/bench/results/6.1.0-57-amd64.csv" >"$tmp/plain"
tap_ok "$([ ! -s "$tmp/plain" ] && echo 1)" "a CSV without counts: nothing printed" "$(cat "$tmp/plain")" || true

# bench/README.md shows the table the step computes.
model md "$fixture" | grep '^| [0-9]' >"$tmp/md"
notin=$(grep -vxFf "$top/bench/README.md" "$tmp/md" || true)
tap_ok "$([ -s "$tmp/md" ] && [ -z "$notin" ] && echo 1)" \
	"bench/README.md holds the modelled table of the fixture, row for row" "$notin" || true

# The copying mover's decision (bench/README.md, "Whole PTE tables moved by
# copying"): copy-tables.awk makes the copying mover the model's fastremap,
# and the README's table has the model's figures, CPU by CPU.
copyfix=$here/fixture-copy-tables-6.1.0-57-amd64.csv
awk -F, -v OFS=, -f "$here/copy-tables.awk" "$copyfix" >"$tmp/copy.csv"
model md "$tmp/copy.csv" >"$tmp/copy.md"
crows=$(grep -c '^| 3_copy | \(per_entry\|mremap\) |' "$tmp/copy.md" || true)
tap_ok "$([ "$crows" = $((2 * x86)) ] && echo 1)" \
	"copy-tables.awk: the copying mover against the per-entry mover and mremap(2), per x86-64 CPU ($crows rows)" \
	"$(cat "$tmp/copy.md")" || true
want=$(awk -F' [|] ' '/^[|] 3_copy [|]/ {
		cpu = $3; fr[cpu] = $4; o[cpu, $2] = $5; r[cpu, $2] = $6
		if (!(cpu in seen)) { seen[cpu] = 1; order[++n] = cpu }
	}
	END {
		for (i = 1; i <= n; i++) {
			c = order[i]
			printf "| %s | %s | %s | %s | %s | %s |\n", c, fr[c], o[c, "per_entry"],
				o[c, "mremap"], r[c, "per_entry"], r[c, "mremap"]
		}
	}' "$tmp/copy.md")
missing_rows() { # missing_rows FILE: the rows of $want that FILE lacks
	while IFS= read -r l; do grep -qF "$l" "$1" || echo "$l"; done <<<"$want"
}
notin=$(missing_rows "$top/bench/README.md")
tap_ok "$([ -n "$want" ] && [ -z "$notin" ] && echo 1)" \
	"bench/README.md holds the copying mover's modelled figures, CPU by CPU" "$notin" || true
# Its positive control: one ratio off in a copy of the README is seen.
first=$(head -n 1 <<<"$want")
bad=${first%x |}
bad="${bad%?}9x |"
grep -vF "$first" "$top/bench/README.md" >"$tmp/readme"
echo "$bad" >>"$tmp/readme"
tap_ok "$([ "$bad" != "$first" ] && [ -n "$(missing_rows "$tmp/readme")" ] && echo 1)" \
	"positive control: a README row with one figure off is reported" || true
# Its positive control: counts of one mover alone give no decision.
tap_ok "$(awk -F, -v OFS=, -f "$here/copy-tables.awk" "$fixture" >/dev/null || echo 1)" \
	"copy-tables.awk fails on counts of one mover alone (the first fixture)" || true

tap_done_run
