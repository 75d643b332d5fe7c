#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Signed S3 requests from botocore, as test vectors for lib/sigv4.c.

sigv4_vectors.py N SEED: N requests (header-signed and presigned, random
methods, keys, queries and headers) on stdout, one block each:
  M method / P path / Q query / H name:value (repeated) / S secret /
  X payload hash / A authorization value (header-signed) / . (end)
"""
import random
import sys
from urllib.parse import quote, urlsplit

from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

n, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
CHARS = 'abcXYZ019 -_.~/+=&%!*\'()$,;:@[]\u00e9\u4e2d'


def word(lo, hi):
    return ''.join(rng.choice(CHARS) for _ in range(rng.randint(lo, hi)))


def query():
    params = []
    for _ in range(rng.randint(0, 4)):
        k = rng.choice(['prefix', 'delimiter', 'max-keys', 'list-type',
                        'continuation-token', 'uploads', 'partNumber',
                        'uploadId', 'marker', word(1, 6)])
        v = word(0, 8)
        params.append(quote(k, safe='-_.~') +
                      ('' if k == 'uploads' else '=' + quote(v, safe='-_.~')))
    return '&'.join(params)


for i in range(n):
    ak = 'AKID' + ''.join(rng.choice('ABCDEFGHIJ0123456789') for _ in range(16))
    sk = ''.join(rng.choice('abcdefXYZ0123456789/+') for _ in range(40))
    region = rng.choice(['us-east-1', 'kelpie', 'eu-west-3'])
    method = rng.choice(['GET', 'PUT', 'HEAD', 'DELETE', 'POST'])
    path = '/' + quote(word(1, 10), safe='/~') + '/' + quote(word(0, 20),
                                                            safe='/~')
    q = query()
    url = 'http://kelpie.test:7480' + path + ('?' + q if q else '')
    headers = {}
    if rng.random() < 0.5:
        headers['Content-Type'] = 'application/octet-stream'
    if rng.random() < 0.5:
        headers['x-amz-meta-note'] = '  a  b\t c '
    presigned = rng.random() < 0.4
    body = b''
    if method in ('PUT', 'POST') and not presigned:
        body = word(0, 30).encode()
    req = AWSRequest(method=method, url=url, headers=headers, data=body)
    creds = Credentials(ak, sk)
    if presigned:
        S3SigV4QueryAuth(creds, 's3', region, expires=3600).add_auth(req)
    else:
        S3SigV4Auth(creds, 's3', region).add_auth(req)
    parts = urlsplit(req.url)
    print('M', method)
    print('P', parts.path)
    print('Q', parts.query)
    print('H', 'host:' + parts.netloc)
    for k, v in req.headers.items():
        if k.lower() != 'authorization':
            print('H', k + ':' + v)
    print('S', sk)
    if presigned:
        print('X', 'UNSIGNED-PAYLOAD')
    else:
        print('X', req.headers['X-Amz-Content-SHA256'])
        print('A', req.headers['Authorization'])
    print('.')
