# SPDX-License-Identifier: MIT
# Sourced by bench scripts (bash).
#   median               the median of the numbers on stdin, "nan" if none
#   tworail_up NAME NET RATE [RATE2]
#                        two namespaces $a and $b (uroce-NAME-PID-a/-b,
#                        removed at exit with the temporary dir $tmp) joined
#                        by two veth pairs, rail i = r<i>a (NET.i.1/30 in
#                        $a) to r<i>b (NET.i.2/30 in $b), each shaped by tbf
#                        at both ends to RATE (rail 2 to RATE2 if given);
#                        returns once the kernel says all four links are up.

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }

tworail_up() {
	local net=$2 rate=$3 rate2=${4:-$3} x i
	a=uroce-$1-$$-a b=uroce-$1-$$-b
	tmp=$(mktemp -d)
	trap 'ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; rm -rf "$tmp"' EXIT
	ip netns add $a && ip netns add $b || return 1
	for x in $a $b; do ip -n $x link set lo up; done
	for i in 1 2; do
		ip -n $a link add r${i}a type veth peer name r${i}b netns $b
		ip -n $a addr add $net.$i.1/30 dev r${i}a
		ip -n $b addr add $net.$i.2/30 dev r${i}b
	done
	for x in "$a r1a $rate" "$a r2a $rate2" "$b r1b $rate" "$b r2b $rate2"; do
		set -- $x
		ip -n $1 link set $2 up
		ip netns exec $1 tc qdisc add dev $2 root tbf rate "$3" burst 32k latency 20ms
	done
	# The kernel sets the veths' operational state up to a second after
	# their carriers (its link watch): wait for it, so that no run starts
	# sooner.
	for i in $(seq 50); do
		[[ $( (ip netns exec $a cat /sys/class/net/r{1,2}a/operstate
		       ip netns exec $b cat /sys/class/net/r{1,2}b/operstate) | grep -c '^up$') == 4 ]] && return 0
		sleep 0.1
	done
}
