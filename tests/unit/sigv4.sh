#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lib/sigv4.c against botocore (Debian's python3-botocore, which make
# check installs): 400 fresh requests signed by botocore, with headers
# or presigned, random methods, keys, queries and header values, must
# verify, and stop verifying when the method, path, secret, payload hash
# or a signed header changes.  The seed is printed: a failure reproduces
# with SIGV4_SEED=N.  One check: prints "1 passed, 0 failed" or
# "0 passed, 1 failed".
cd "$(dirname "$0")/../.." || exit 2
seed=${SIGV4_SEED:-$RANDOM}
py=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import botocore' 2>/dev/null; then
		py=$p
		break
	fi
done
if [ -z "$py" ]; then
	echo "botocore is not installed (python3-botocore)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
[ -x build/tests/test_sigv4 ] ||
	make --no-print-directory build/tests/test_sigv4 >/dev/null ||
	{ echo "0 passed, 1 failed"; exit 1; }
vec=$(mktemp)
trap 'rm -f "$vec"' EXIT
echo "seed $seed, botocore $("$py" -c 'import botocore; print(botocore.__version__)')"
"$py" tests/unit/sigv4_vectors.py 400 "$seed" >"$vec" ||
	{ echo "0 passed, 1 failed"; exit 1; }
build/tests/test_sigv4 "$vec"
