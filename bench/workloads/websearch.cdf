# WebSearch flow sizes: Alizadeh et al., "Data Center TCP (DCTCP)",
# SIGCOMM 2010, Figure 4 (query and background traffic of a production
# search cluster), as distributed with HPCC's simulations (Li et al.,
# SIGCOMM 2019): github.com/alibaba-edu/High-Precision-Congestion-Control,
# traffic_gen/WebSearch_distribution.txt (commit 9cf8b9e).
# bytes percentile (piecewise linear; mean 1.71 MB)
0 0
10000 15
20000 20
30000 30
50000 40
80000 53
200000 60
1000000 70
2000000 80
5000000 90
10000000 97
30000000 100
