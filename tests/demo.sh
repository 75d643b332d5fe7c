#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Kelpie demo (`make demo`): start a 3-node cluster on 127.0.0.1:7000-7002,
# format it with 3 copies, create a VDI, write random data and read it back,
# show the nodes and VDIs, and leave the cluster running.
#
# Environment: KELPIE_DEMO_DIR (state directory, default /tmp/kelpie-demo;
# wiped first).

set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
SHEEP=$TOP/sheep/sheep
DOG=$TOP/dog/dog
DIR=${KELPIE_DEMO_DIR:-/tmp/kelpie-demo}
PORTS=(7000 7001 7002)

die()
{
	echo "demo: $*" >&2
	exit 1
}

for b in "$SHEEP" "$DOG"; do
	[ -x "$b" ] || die "$b is not built (run make)"
done

port_busy()
{
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p &&
		$4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp /proc/net/tcp6
}

busy=()
for p in "${PORTS[@]}"; do
	port_busy "$p" && busy+=("$p")
done
if [ ${#busy[@]} -gt 0 ]; then
	echo "demo: port(s) ${busy[*]} on 127.0.0.1 already in use." >&2
	echo "demo: if an earlier demo is still running, stop it with" >&2
	echo "        $DOG cluster shutdown" >&2
	exit 1
fi

case $DIR in
/ | "") die "refusing to use '$DIR' as the state directory" ;;
esac
rm -rf "$DIR"
mkdir -p "$DIR" || die "cannot create $DIR"

echo "== starting 3 sheep in $DIR"
for i in 0 1 2; do
	mkdir -p "$DIR/$i"
	timeout -k 5 30 setsid -w "$SHEEP" -p "${PORTS[i]}" -c "local:$DIR/cluster" -n -z "$i" \
		-P "$DIR/$i/pid" "$DIR/$i" </dev/null >"$DIR/$i.out" 2>&1 ||
		die "sheep $i failed to start: $(tail -n 5 "$DIR/$i.out" "$DIR/$i/sheep.log" 2>/dev/null)"
done

# wait until every node lists all 3 nodes
for i in 0 1 2; do
	for ((t = 0; t < 150; t++)); do
		n=$("$DOG" node list -p "${PORTS[i]}" 2>/dev/null | tail -n +2 |
			grep -c .)
		[ "$n" = 3 ] && break
		sleep 0.2
	done
	[ "$n" = 3 ] || die "node $i sees $n nodes, not 3"
done

echo "== dog cluster format -c 3"
"$DOG" cluster format -c 3 -p 7000 || die "format failed"
for ((t = 0; t < 150; t++)); do
	s=$("$DOG" cluster info -p 7000 2>/dev/null | head -n 1)
	[ "$s" = "Cluster status: running, auto-recovery enabled" ] && break
	sleep 0.2
done
echo "$s"

echo "== dog vdi create demo 1G"
"$DOG" vdi create demo 1G -p 7000 || die "vdi create failed"

echo "== writing 32 MiB of random data through node 7000"
head -c 32M /dev/urandom >"$DIR/data"
"$DOG" vdi write demo 0 33554432 -p 7000 <"$DIR/data" || die "vdi write failed"
for p in "${PORTS[@]}"; do
	"$DOG" vdi read demo 0 33554432 -p "$p" >"$DIR/read" ||
		die "vdi read through $p failed"
	if cmp -s "$DIR/data" "$DIR/read"; then
		echo "read back through 127.0.0.1:$p: identical"
	else
		die "data read through $p differs"
	fi
done
rm -f "$DIR/read"

echo "== dog node list"
"$DOG" node list -p 7000
echo "== dog vdi list"
"$DOG" vdi list -p 7000

pids=$(cat "$DIR"/[012]/pid 2>/dev/null | xargs)
cat <<EOF

The cluster keeps running (state in $DIR, logs in $DIR/N/sheep.log).
Try for example:
    $DOG cluster info
    $DOG vdi read demo 0 4096 | od -A d -t x1 | head
Stop it with:
    $DOG cluster shutdown
(the sheep PIDs are: $pids)
EOF
