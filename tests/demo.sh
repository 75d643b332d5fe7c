#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Kelpie demo (`make demo`): start a 3-node cluster on 127.0.0.1:7000-7002,
# two of them object gateways (S3 and Swift on 7480 and 7481), format it
# with 3 copies, create a VDI, write random data and read it back, make an
# S3 user and store and read an object through both gateways (with the
# AWS CLI, if installed), show the nodes, VDIs and buckets, and leave the
# cluster running.
#
# Environment: KELPIE_DEMO_DIR (state directory, default /tmp/kelpie-demo;
# wiped first); KELPIE_DEMO_PORT and KELPIE_DEMO_S3_PORT (the first port
# of the sheep and of the gateways, default 7000 and 7480: for tests).

set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
SHEEP=$TOP/sheep/sheep
DOG=$TOP/dog/dog
DIR=${KELPIE_DEMO_DIR:-/tmp/kelpie-demo}
P=${KELPIE_DEMO_PORT:-7000}
S3P=${KELPIE_DEMO_S3_PORT:-7480}
PORTS=("$P" $((P + 1)) $((P + 2)))
S3_PORTS=("$S3P" $((S3P + 1)))
AWS=/usr/bin/aws

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
for p in "${PORTS[@]}" "${S3_PORTS[@]}"; do
	port_busy "$p" && busy+=("$p")
done
if [ ${#busy[@]} -gt 0 ]; then
	echo "demo: port(s) ${busy[*]} on 127.0.0.1 already in use." >&2
	echo "demo: if an earlier demo is still running, stop it with" >&2
	echo "        $DOG cluster shutdown -p $P" >&2
	exit 1
fi

case $DIR in
/ | "") die "refusing to use '$DIR' as the state directory" ;;
esac
rm -rf "$DIR"
mkdir -p "$DIR" || die "cannot create $DIR"

echo "== starting 3 sheep in $DIR, S3 and Swift on 127.0.0.1:${S3_PORTS[0]} and :${S3_PORTS[1]}"
for i in 0 1 2; do
	mkdir -p "$DIR/$i"
	s3=()
	[ "$i" -lt 2 ] && s3=(--s3 "127.0.0.1:${S3_PORTS[i]}")
	timeout -k 5 30 setsid -w "$SHEEP" -p "${PORTS[i]}" -c "local:$DIR/cluster" -n -z "$i" \
		-P "$DIR/$i/pid" "${s3[@]}" "$DIR/$i" </dev/null >"$DIR/$i.out" 2>&1 ||
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
"$DOG" cluster format -c 3 -p "$P" || die "format failed"
for ((t = 0; t < 150; t++)); do
	s=$("$DOG" cluster info -p "$P" 2>/dev/null | head -n 1)
	[ "$s" = "Cluster status: running, auto-recovery enabled" ] && break
	sleep 0.2
done
echo "$s"

echo "== dog vdi create demo 1G"
"$DOG" vdi create demo 1G -p "$P" || die "vdi create failed"

echo "== writing 32 MiB of random data through node $P"
head -c 32M /dev/urandom >"$DIR/data"
"$DOG" vdi write demo 0 33554432 -p "$P" <"$DIR/data" || die "vdi write failed"
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

echo "== dog s3 user create demo"
"$DOG" s3 user create demo -r -p "$P" >"$DIR/s3-keys" ||
	die "s3 user create failed"
read -r AK SK <"$DIR/s3-keys"
# path-style buckets; checksums only where S3 needs them (what newer AWS
# CLIs send with every PUT is refused NotImplemented)
cat >"$DIR/aws.cfg" <<END
[default]
region = us-east-1
request_checksum_calculation = when_required
response_checksum_validation = when_required
s3 =
    addressing_style = path
END

aws_at()
{
	local port=$1
	shift
	env AWS_CONFIG_FILE="$DIR/aws.cfg" AWS_ACCESS_KEY_ID="$AK" \
		AWS_SECRET_ACCESS_KEY="$SK" AWS_SHARED_CREDENTIALS_FILE=/dev/null \
		AWS_EC2_METADATA_DISABLED=true AWS_PAGER= \
		"$AWS" --endpoint-url "http://127.0.0.1:$port" "$@"
}

if [ -x "$AWS" ]; then
	echo "== aws s3 mb s3://demo; the 32 MiB in through :${S3_PORTS[0]}, out through :${S3_PORTS[1]}"
	aws_at "${S3_PORTS[0]}" s3 mb s3://demo || die "aws s3 mb failed"
	aws_at "${S3_PORTS[0]}" s3 cp --only-show-errors "$DIR/data" \
		s3://demo/data || die "aws s3 cp in failed"
	aws_at "${S3_PORTS[1]}" s3 cp --only-show-errors s3://demo/data \
		"$DIR/read" || die "aws s3 cp out failed"
	cmp -s "$DIR/data" "$DIR/read" ||
		die "the object read through ${S3_PORTS[1]} differs"
	echo "read back through 127.0.0.1:${S3_PORTS[1]}: identical"
	rm -f "$DIR/read"
else
	echo "(no AWS CLI at $AWS: make deps installs it)"
fi

echo "== dog node list"
"$DOG" node list -p "$P"
echo "== dog vdi list"
"$DOG" vdi list -p "$P"
echo "== dog s3 bucket list"
"$DOG" s3 bucket list -p "$P"

pids=$(cat "$DIR"/[012]/pid 2>/dev/null | xargs)
cat <<END

The cluster keeps running (state in $DIR, logs in $DIR/N/sheep.log).
Try for example:
    $DOG cluster info -p $P
    $DOG vdi read demo 0 4096 -p $P | od -A d -t x1 | head
Object storage: S3 and Swift on 127.0.0.1:${S3_PORTS[0]} and :${S3_PORTS[1]}, as user demo:
    export AWS_CONFIG_FILE=$DIR/aws.cfg
    export AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK
    aws --endpoint-url http://127.0.0.1:${S3_PORTS[0]} s3 ls s3://demo
    swift -A http://127.0.0.1:${S3_PORTS[1]}/auth/v1.0 -U demo:demo -K $SK list demo
    $DOG s3 bucket stat demo -p $P
Stop it with:
    $DOG cluster shutdown -p $P
(the sheep PIDs are: $pids)
END
