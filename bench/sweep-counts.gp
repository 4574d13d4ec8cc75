# SPDX-License-Identifier: GPL-2.0
# The counted size sweep's chart (bench/README.md, "How cost grows with
# size"): per move, the instructions executed, the atomic read-modify-writes
# and the TLB invalidations, against size, one line per level and
# contender, log-log. Exact counts of the counting plugin, not times.
# gnuplot -e "datafile='X.dat'; cmds='X.plt'; outfile='X.png'; kernel='...'" bench/sweep-counts.gp
# X.dat and X.plt come from bench/sweep-plotdata.awk (counts=1).
if (!exists("timing")) timing = ""
load cmds
set terminal pngcairo size 1280,1600 font "sans,10" noenhanced
set output outfile
set multiplot layout 3,1 title sprintf("What a move executes as its size grows: %s -- exact counts (QEMU TCG plugin), fewest-instruction timed repetition", kernel)
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
unset multiplot
