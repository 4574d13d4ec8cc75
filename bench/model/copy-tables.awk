# SPDX-License-Identifier: GPL-2.0
# The copying mover's decision as the model reads it: from a counted CSV
# (BENCH_COUNT=1, workloads 3 and 3e of one boot, FASTREMAP_BENCH_MODULE=test:
# workload 3's fastremap is the table-copying mover, 3e's the per-entry one;
# in counts made before copying was the default, 3t's fastremap was the
# copying mover and 3's the per-entry one), a CSV in which workload 3_copy
# has the copying mover as "fastremap", and the per-entry mover
# ("per_entry") and workload 3's mremap(2) as the others, so that
# model.awk's ratio columns are per-entry/copying and mremap(2)/copying.
# The second workload's own mremap(2) row, a second count of the same
# call, is left out. bench/README.md, "Whole PTE tables moved by copying".
# Usage: awk -F, -v OFS=, -f copy-tables.awk CSV > OUT; awk -F, -f model.awk costs.tsv OUT
NR == 1 {
	print
	next
}
$2 == "3_pte" || $2 == "3e_pte_per_entry" || $2 == "3t_pte_copy_tables" {
	row[$2, $3] = $0
}
# LINE with workload 3_copy and contender WHO; a paired ratio (field 11)
# is kept only on the copying mover's row, the others' were not against it.
function relabel(line, who) {
	$0 = line
	$2 = "3_copy"
	$3 = who
	if (who != "fastremap")
		$11 = ""
	return $0
}
END {
	if (("3t_pte_copy_tables", "fastremap") in row) {
		copy = row["3t_pte_copy_tables", "fastremap"]
		per = row["3_pte", "fastremap"]
	} else {
		copy = row["3_pte", "fastremap"]
		per = row["3e_pte_per_entry", "fastremap"]
	}
	mr = row["3_pte", "mremap"]
	if (copy == "" || per == "" || mr == "")
		exit 1
	print relabel(copy, "fastremap")
	print relabel(per, "per_entry")
	print relabel(mr, "mremap")
}
