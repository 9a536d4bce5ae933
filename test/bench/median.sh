# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmark scripts. median prints the median of the numbers on its
# standard input, one a line (the mean of the middle two for an even count).
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
