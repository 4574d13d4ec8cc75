# SPDX-License-Identifier: GPL-2.0
# The size sweep's exact counts (BENCH_COUNT=1): the counting plugin's
# counts per region (bench/plugin/fr_count.c) joined with fr_bench's
# FR-BENCH-SWEEP-COUNT block, one row per counted move.
# Usage: awk -f sweep-counts.awk PLUGIN_OUT COUNT_TABLE > KERNEL-sweep-counts.csv
#   PLUGIN_OUT   "id regions insns_user insns_kernel loads stores atomics
#                tlbi ipis irqs_out irqs_out_insns kinds" per region id
#   COUNT_TABLE  id,level,contender,size_bytes,population,rep,traced,entries
# Interrupts are already left out by the plugin (irqs_out says how
# many); the traced move (its tlb_flush tracepoint recording) is marked.

FILENAME == ARGV[1] {
	if ($0 ~ /^#/ || NF < 12)
		next
	id = tolower($1)
	line[id] = $2
	for (k = 3; k <= 11; k++)
		line[id] = line[id] "," $k
	kinds[id] = $12
	next
}

FNR == 1 {
	print "level,contender,size_bytes,population,rep,traced,entries,regions,insns_user,insns_kernel,loads,stores,atomics,tlbi,ipis,irqs_out,irqs_out_insns,tlbi_kinds"
	FS = ","
	next
}

{
	split($0, f, ",")
	id = tolower(f[1])
	if (!(id in line))
		next
	k = kinds[id]
	gsub(/,/, ";", k)
	print f[2] "," f[3] "," f[4] "," f[5] "," f[6] "," f[7] "," f[8] "," line[id] "," k
}
