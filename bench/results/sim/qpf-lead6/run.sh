#!/bin/bash
cd "$(dirname "$0")/../../../.."
for k in 8 16; do for seed in 1 2 3; do for pfc in on off; do for cc in auto uroce; do
  [ $k = 8 ] && ARR=10000 || ARR=3000
  case $cc in auto) CA="-s cc=auto";; uroce) CA="-s cc=dcqcn -s dcqcn_profile=uroce";; esac
  o=bench/results/sim/qpf-lead6/k${k}_s${seed}_${pfc}_${cc}.txt
  [ -s $o ] && continue
  nice -n 5 build/bin/uroce-sim -s k=$k --seed $seed --lb single -s pfc=$pfc -s kmin_kb=5 -s kmax_kb=200 -s pmax=0.01 $CA -w poisson -s cdf=bench/workloads/websearch.cdf -s load=0.5 -s arrive_us=$ARR -s qp_per_flow=on > $o.tmp && mv $o.tmp $o
done; done; done; done
