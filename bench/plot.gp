# One kernel's results as grouped bars, log scale, 95% CI error bars.
# gnuplot -e "datafile='X.dat'; outfile='X.png'; kernel='...'; timing='...'" bench/plot.gp
# The data comes from bench/plotdata.awk.
if (!exists("timing")) timing = ""
set terminal pngcairo size 1280,720 font "sans,10" noenhanced
set output outfile
set title sprintf("fastremap vs mremap(2) vs UFFDIO_MOVE on %s -- %s\nmedian time per move, error bars: 95%% CI of the median (order statistics); lower is better\nlabels: mremap(2) time / fastremap time (uffd: UFFDIO_MOVE time / fastremap time); (I)/(R): significant, the CIs do not overlap", kernel, timing)
set datafile missing "?"
set style data histogram
gap = 1.5  # bar widths between groups; the label offsets below use it
set style histogram errorbars gap 1.5 lw 1.2
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set format y "%.0s%c"
set ylabel "microseconds per move (log scale)"
set grid ytics mytics
set key inside left top vertical opaque box
set xtics rotate by -20 nomirror
set ytics nomirror
set offsets 0, 0, graph 0.12, 0
plot datafile using 2:3:4:xtic(1) title "fastremap (libfastremap)" lc rgb "#1b9e77", \
     '' using 5:6:7 title "mremap(2)" lc rgb "#d95f02", \
     '' using 8:9:10 title "UFFDIO_MOVE" lc rgb "#7570b3", \
     '' using 11:12:13 title "memcpy (bandwidth floor)" lc rgb "#999999", \
     '' using ($0 + $17 / (4 + gap)):14:15 with labels offset 0,0.6 font ",9" notitle, \
     '' using ($0 + $17 / (4 + gap)):14:16 with labels offset 0,1.6 font ",9" notitle
