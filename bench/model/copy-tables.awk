# SPDX-License-Identifier: GPL-2.0
# The copying mover's decision as the model reads it: from a counted CSV
# (BENCH_COUNT=1, workloads 3 and 3t of one boot, FASTREMAP_BENCH_MODULE=test),
# a CSV in which workload 3_copy has the table-copying mover (3t's
# fastremap) as "fastremap", and workload 3's per-entry mover ("per_entry")
# and mremap(2) as the others, so that model.awk's ratio columns are
# per-entry/copying and mremap(2)/copying. 3t's own mremap(2) row, a second
# count of the same call, is left out. bench/README.md, "Whole PTE tables
# moved by copying".
# Usage: awk -F, -v OFS=, -f copy-tables.awk CSV > OUT; awk -F, -f model.awk costs.tsv OUT
NR == 1 {
	print
	next
}
$2 == "3t_pte_copy_tables" && $3 == "fastremap" {
	$2 = "3_copy"
	copy = $0
	next
}
$2 == "3_pte" && ($3 == "fastremap" || $3 == "mremap") {
	$2 = "3_copy"
	$11 = ""	# its paired ratio was against the per-entry mover
	if ($3 == "fastremap")
		$3 = "per_entry"
	rest = rest $0 "\n"
}
END {
	if (copy == "" || rest == "")
		exit 1
	print copy
	printf "%s", rest
}
