# The size sweep's charts (bench/README.md, "How cost grows with size"),
# log-log against size, one line per level and contender. Timed: time per
# move, and mremap(2)'s time over fastremap's. With counts=1, the counted
# sweep's exact counts per move (the counting plugin's, not times):
# instructions, atomic read-modify-writes and TLB invalidations.
# gnuplot -e "datafile='X.dat'; cmds='X.plt'; outfile='X.png'; kernel='...'; timing='...'" bench/sweep.gp
# gnuplot -e "counts=1; datafile='X.dat'; cmds='X.plt'; outfile='X.png'; kernel='...'" bench/sweep.gp
# X.dat and X.plt come from bench/sweep-plotdata.awk (with counts=1 likewise).
if (!exists("timing")) timing = ""
if (!exists("counts")) counts = 0
load cmds
# Both modes' blocks are read, whichever runs: the other's macros must exist.
do for [m in "times ratios insns atomics tlbis"] { if (!exists(m)) { eval m . ' = "1 notitle"' } }
set terminal pngcairo size 1280,(counts ? 1600 : 1280) font "sans,10" noenhanced
set output outfile
if (counts) {
	set multiplot layout 3,1 title sprintf("What a move executes as its size grows: %s -- exact counts (QEMU TCG plugin), fewest-instruction timed repetition", kernel)
} else {
	set multiplot layout 2,1 title sprintf("How the cost of a move grows with its size: %s -- %s", kernel, timing)
}
set logscale x 2
set logscale y 10
set xrange [2048:137438953472]
set xtics ("4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576, "4M" 4194304, "16M" 16777216, "64M" 67108864, "256M" 268435456, "1G" 1073741824, "4G" 4294967296, "16G" 17179869184, "64G" 68719476736)
set grid xtics ytics mytics
set key outside right top vertical
set lmargin at screen 0.07
set rmargin at screen 0.76
set xlabel "bytes moved (log scale)"
# Past 1 GiB the regions are partly populated (see the README).
set arrow 1 from 1610612736, graph 0 to 1610612736, graph 1 nohead dt 4 lc rgb "#888888"
set format y "%.0s%c"
if (counts) {
	set title "instructions per move, user and kernel (log scale); lower is better"
	set ylabel "instructions"
	plot @insns
	set title "atomic read-modify-writes per move (log scale)"
	set ylabel "atomics"
	plot @atomics
	set title "TLB invalidation instructions per move (log scale)"
	set ylabel "TLB invalidations"
	set format y "%g"
	plot @tlbis
} else {
	set label 1 "partial populations\n(zero / sparse / hzero)" at 2147483648, graph 0.95 left font ",9" tc rgb "#555555"
	set title "median time per move, error bars: 95% CI of the median (min-max below 6 repetitions); lower is better"
	set ylabel "microseconds per move (log scale)"
	plot @times
	set title "mremap(2) time / fastremap time, repetition by repetition (median, 95% CI); above 1: fastremap faster"
	set ylabel "ratio (log scale)"
	set format y "%g"
	set arrow 2 from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb "#000000"
	plot @ratios
}
unset multiplot
