#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The S3 checks of tests 191, 193, 195 and 200, with boto3
(Debian's python3-boto3).

s3_check.py STEP OWNER_PORT READER_PORT KEYFILE [ARGS...]

KEYFILE holds "ACCESS SECRET" of a user.  Each step prints one line per
check that holds and exits 1 at the first that does not, saying why on
stderr.
"""
import base64
import datetime
import email.utils
import hashlib
import hmac
import http.client
import os
import random
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

import boto3
import botocore
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

STEP, OWNER, READER, KEYFILE = sys.argv[1:5]
ARGS = sys.argv[5:]
AK, SK = open(KEYFILE).read().split()


def client(port, ak=AK, sk=SK):
    return boto3.client(
        "s3", endpoint_url=f"http://127.0.0.1:{port}",
        aws_access_key_id=ak, aws_secret_access_key=sk,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"},
                      signature_version="s3v4",
                      retries={"max_attempts": 1}))


def fail(why):
    print("FAIL: " + why, file=sys.stderr)
    sys.exit(1)


def check(cond, what, why=""):
    if not cond:
        fail(f"{what}: {why}")
    print(what)


def code_of(fn, *a, **kw):
    """the S3 error code and HTTP status of a call that must fail"""
    try:
        fn(*a, **kw)
    except botocore.exceptions.ClientError as e:
        return (e.response["Error"]["Code"],
                e.response["ResponseMetadata"]["HTTPStatusCode"])
    return ("no error", 200)


def expect_error(what, want, fn, *a, **kw):
    got = code_of(fn, *a, **kw)
    check(got == want, what, f"got {got}, want {want}")


def raw(port, data, read=True):
    """bytes sent on a connection of their own: the answer's first line"""
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=15)
    s.sendall(data)
    if not read:
        return s
    out = b""
    while b"\r\n" not in out:
        got = s.recv(4096)
        if not got:
            break
        out += got
    s.close()
    return out.split(b"\r\n")[0].decode(errors="replace")


def signed_headers(port, method, path, body, extra=None):
    """headers of a request signed for @body (SigV4, the user's key)"""
    req = AWSRequest(method=method, url=f"http://127.0.0.1:{port}{path}",
                     data=body)
    req.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
    for k, v in (extra or {}).items():
        req.headers[k] = v
    SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    return dict(req.headers.items())


def step_basic():
    s3, rd = client(OWNER), client(READER)
    s3.create_bucket(Bucket="photos")
    expect_error("a bucket made twice: BucketAlreadyOwnedByYou",
                 ("BucketAlreadyOwnedByYou", 409), s3.create_bucket,
                 Bucket="photos")
    expect_error("a bad bucket name: InvalidBucketName",
                 ("InvalidBucketName", 400), s3.create_bucket,
                 Bucket="Bad_Name")
    names = [b["Name"] for b in rd.list_buckets()["Buckets"]]
    check(names == ["photos"], "ListBuckets through the other gateway",
          str(names))

    small = b"hello, kelpie"
    s3.put_object(Bucket="photos", Key="a/small.txt", Body=small,
                  ContentType="text/plain", Metadata={"colour": "blue"})
    big = random.randbytes(9 * 1024 * 1024 + 4321)
    r = s3.put_object(Bucket="photos", Key="big.bin", Body=big)
    check(r["ETag"] == '"%s"' % hashlib.md5(big).hexdigest(),
          "the ETag is the MD5 of the object", r["ETag"])
    open(ARGS[0], "wb").write(big)
    for name, c in (("owner", s3), ("reader", rd)):
        g = c.get_object(Bucket="photos", Key="a/small.txt")
        check(g["Body"].read() == small and
              g["Metadata"] == {"colour": "blue"} and
              g["ContentType"] == "text/plain",
              f"a small object, its type and metadata, via the {name}",
              str(g["Metadata"]))
        got = c.get_object(Bucket="photos", Key="big.bin")["Body"].read()
        check(got == big, f"9 MiB read back via the {name}")
    for rng, want in (("bytes=100-199", big[100:200]),
                      ("bytes=9437000-", big[9437000:]),
                      ("bytes=-10", big[-10:]),
                      ("bytes=0-0", big[:1])):
        g = s3.get_object(Bucket="photos", Key="big.bin", Range=rng)
        check(g["Body"].read() == want and
              g["ResponseMetadata"]["HTTPStatusCode"] == 206,
              f"a ranged GET ({rng})")
    expect_error("a range past the end: InvalidRange", ("InvalidRange", 416),
                 s3.get_object, Bucket="photos", Key="big.bin",
                 Range="bytes=99999999-")
    h = rd.head_object(Bucket="photos", Key="big.bin")
    check(h["ContentLength"] == len(big), "HeadObject: the length")
    etag = h["ETag"]
    expect_error("If-None-Match on the ETag: 304", ("304", 304),
                 s3.get_object, Bucket="photos", Key="big.bin",
                 IfNoneMatch=etag)
    expect_error("If-Match on another ETag: PreconditionFailed",
                 ("PreconditionFailed", 412), s3.get_object,
                 Bucket="photos", Key="big.bin", IfMatch='"00"')
    expect_error("a key that is not there: NoSuchKey", ("NoSuchKey", 404),
                 rd.get_object, Bucket="photos", Key="nope")
    expect_error("a bucket that is not there: NoSuchBucket",
                 ("NoSuchBucket", 404), s3.list_objects_v2, Bucket="nope")


def step_list():
    s3, rd = client(OWNER), client(READER)
    keys = ["d%02d/f%03d" % (d, f) for d in range(12) for f in range(10)]
    keys += ["top%d" % i for i in range(5)] + ["sp ace+plus/é"]
    for k in keys:
        s3.put_object(Bucket="photos", Key=k, Body=k.encode())
    want = sorted(keys + ["a/small.txt", "big.bin"])
    got, token, pages = [], None, 0
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = rd.list_objects_v2(Bucket="photos", MaxKeys=50, **kw)
        got += [o["Key"] for o in r.get("Contents", [])]
        pages += 1
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    check(got == want and pages == 3,
          "ListObjectsV2 in pages of 50: every key once, in order",
          f"{pages} pages, {len(got)} keys")
    r = rd.list_objects_v2(Bucket="photos", Delimiter="/")
    pre = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
    top = [o["Key"] for o in r.get("Contents", [])]
    check(pre == ["a/"] + ["d%02d/" % d for d in range(12)] +
          ["sp ace+plus/"] and top == ["big.bin"] +
          ["top%d" % i for i in range(5)],
          "a delimiter: the common prefixes and the keys at the top",
          f"{pre} {top}")
    got, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = rd.list_objects_v2(Bucket="photos", Delimiter="/", MaxKeys=4,
                               **kw)
        got += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        got += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    check(sorted(got) == sorted(pre + top),
          "a delimiter in pages of 4: every prefix and key once",
          str(got))
    got, marker = [], None
    while True:
        kw = {"Marker": marker} if marker else {}
        r = rd.list_objects(Bucket="photos", Delimiter="/", MaxKeys=4, **kw)
        got += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        got += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        marker = r["NextMarker"]
    check(sorted(got) == sorted(pre + top),
          "ListObjects (v1) with a delimiter in pages of 4 through "
          "NextMarker: every prefix and key once", str(got))
    for k in ("pfx/", "pfx/a"):
        s3.put_object(Bucket="photos", Key=k, Body=b"p")
    got, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = rd.list_objects_v2(Bucket="photos", Prefix="pfx/", Delimiter="/",
                               MaxKeys=1, **kw)
        got += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    check(got == ["pfx/", "pfx/a"], "a key that is the prefix itself, in "
          "pages of one: then the keys under it", str(got))
    for k in ("pfx/", "pfx/a"):
        s3.delete_object(Bucket="photos", Key=k)
    r = s3.list_objects(Bucket="photos", Prefix="d03/", Marker="d03/f004")
    check([o["Key"] for o in r["Contents"]] ==
          ["d03/f%03d" % f for f in range(5, 10)],
          "ListObjects (v1): a prefix and a marker")
    r = s3.list_objects_v2(Bucket="photos", Prefix="d1", StartAfter="d10/f009")
    check([o["Key"] for o in r["Contents"]] ==
          ["d11/f%03d" % f for f in range(10)], "ListObjectsV2: start-after")
    r = s3.list_objects_v2(Bucket="photos", Prefix="sp ace")
    check([o["Key"] for o in r["Contents"]] == ["sp ace+plus/é"],
          "a key with a space, a plus and UTF-8, url-encoded both ways")
    for k in keys:
        s3.delete_object(Bucket="photos", Key=k)
    r = rd.list_objects_v2(Bucket="photos")
    check([o["Key"] for o in r["Contents"]] == ["a/small.txt", "big.bin"],
          "DeleteObject: the keys are gone")


def step_auth():
    s3 = client(OWNER)
    expect_error("a wrong secret: SignatureDoesNotMatch",
                 ("SignatureDoesNotMatch", 403),
                 client(OWNER, sk=SK[:-1] + ("A" if SK[-1] != "A" else "B"))
                 .list_buckets)
    expect_error("an unknown key: InvalidAccessKeyId",
                 ("InvalidAccessKeyId", 403),
                 client(OWNER, ak="AAAAAAAAAAAAAAAAAAAA").list_buckets)
    other = open(ARGS[0]).read().split()
    expect_error("a deleted user's key: InvalidAccessKeyId",
                 ("InvalidAccessKeyId", 403),
                 client(OWNER, other[0], other[1]).list_buckets)
    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": "photos", "Key": "a/small.txt"},
        ExpiresIn=60)
    check(urllib.request.urlopen(url).read() == b"hello, kelpie",
          "a presigned GET")
    try:
        urllib.request.urlopen(url.replace("small", "smalX"))
        fail("a presigned URL changed: accepted")
    except urllib.error.HTTPError as e:
        check(e.code == 403, "a presigned URL changed: 403")
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{OWNER}/photos/a/small.txt")
        fail("an anonymous GET: accepted")
    except urllib.error.HTTPError as e:
        check(e.code == 403 and b"AccessDenied" in e.read(),
              "an anonymous GET: AccessDenied")
    # a SigV2 URL with a forged signature
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{OWNER}/photos/a/small.txt"
                               f"?AWSAccessKeyId={AK}&Expires="
                               f"{int(time.time()) + 60}&Signature="
                               "AAAAAAAAAAAAAAAAAAAAAAAAAAA%3D")
        fail("a forged SigV2 URL: accepted")
    except urllib.error.HTTPError as e:
        check(e.code == 403 and b"SignatureDoesNotMatch" in e.read(),
              "a forged SigV2 URL: SignatureDoesNotMatch")
    # a body other than the one signed, of the same length
    body = b"the signed body!"
    hdrs = signed_headers(OWNER, "PUT", "/photos/sha", body)
    c = http.client.HTTPConnection("127.0.0.1", int(OWNER), timeout=15)
    c.request("PUT", "/photos/sha", body=b"another body!!!!", headers=hdrs)
    r = c.getresponse()
    check(r.status == 400 and b"XAmzContentSHA256Mismatch" in r.read(),
          "a body that is not the one signed: XAmzContentSHA256Mismatch")
    expect_error("a wrong Content-MD5: BadDigest", ("BadDigest", 400),
                 s3.put_object, Bucket="photos", Key="md5", Body=b"abc",
                 ContentMD5="1B2M2Y8AsgTpgAmY7PhCfg==")
    expect_error("the key after a failed PUT: NoSuchKey", ("NoSuchKey", 404),
                 s3.get_object, Bucket="photos", Key="md5")


def step_refused():
    s3, rd = client(OWNER), client(READER)
    silent = raw(OWNER, b"", read=False)
    t0 = time.monotonic()
    data = random.randbytes(6 * 1024 * 1024 + 17)
    r = rd.put_object(Bucket="photos", Key="via-reader", Body=data,
                      Metadata={"from": "node1"})
    g = s3.get_object(Bucket="photos", Key="via-reader")
    check(r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest() and
          g["Body"].read() == data and g["Metadata"] == {"from": "node1"},
          "a PUT through the gateway that does not own the bucket: relayed "
          "to the owner, read back through it")
    expect_error("a bad digest through the other gateway: BadDigest",
                 ("BadDigest", 400), rd.put_object, Bucket="photos",
                 Key="md5", Body=b"abc", ContentMD5="1B2M2Y8AsgTpgAmY7PhCfg==")
    rd.delete_object(Bucket="photos", Key="via-reader")
    expect_error("a DELETE through the other gateway: the key is gone",
                 ("NoSuchKey", 404), s3.get_object, Bucket="photos",
                 Key="via-reader")
    expect_error("PutObjectTagging: NotImplemented", ("NotImplemented", 501),
                 s3.put_object_tagging, Bucket="photos", Key="a/small.txt",
                 Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    expect_error("GetBucketVersioning: NotImplemented",
                 ("NotImplemented", 501), s3.get_bucket_versioning,
                 Bucket="photos")
    expect_error("PutBucketAcl: NotImplemented", ("NotImplemented", 501),
                 s3.put_bucket_acl, Bucket="photos", ACL="public-read")
    expect_error("a public-read object: NotImplemented",
                 ("NotImplemented", 501), s3.put_object, Bucket="photos",
                 Key="pub", Body=b"x", ACL="public-read")
    expect_error("DeleteBucket of a bucket with objects: BucketNotEmpty",
                 ("BucketNotEmpty", 409), s3.delete_bucket, Bucket="photos")
    check(raw(OWNER, b"GARBAGE\r\n\r\n").startswith("HTTP/1.1 400"),
          "a request line that is not one: 400")
    check(raw(OWNER, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " +
              b"a" * 20000 + b"\r\n\r\n").startswith("HTTP/1.1 431"),
          "a head over 16 KiB: 431")
    check(raw(OWNER, b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
              b"gzip\r\n\r\n").startswith("HTTP/1.1 501"),
          "a transfer coding other than chunked: 501")
    # a client that sends half a head holds no worker: others are served
    slow = [raw(OWNER, b"GET / HTTP/1.1\r\nHost:", read=False)
            for _ in range(20)]
    t = time.monotonic()
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    check(names == ["photos"] and time.monotonic() - t < 5,
          "20 clients with half a head each: a request is still served")
    for s in slow:
        s.close()
    # one address holds at most 64 connections: the 65th is refused,
    # and a client at another address is served meanwhile
    many = []
    for _ in range(65):
        c = socket.socket()
        c.bind(("127.0.0.2", 0))
        c.settimeout(10)
        c.connect(("127.0.0.1", int(OWNER)))
        many.append(c)
    try:
        first = many[-1].recv(200)
    except socket.timeout:
        first = b"nothing"
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    check(first.startswith(b"HTTP/1.1 503") and names == ["photos"],
          "65 connections from one address: the 65th is answered 503, "
          "another address is served", repr(first[:60]))
    for c in many:
        c.close()
    silent.settimeout(20)
    try:
        gone = silent.recv(1) == b""
    except ConnectionResetError:
        gone = True
    except socket.timeout:
        gone = False
    check(gone and time.monotonic() - t0 < 20,
          "a connection that sends nothing is closed within 10 s or so")


def step_multipart():
    s3, rd = client(OWNER), client(READER)
    mib = 1024 * 1024
    parts = [random.randbytes(5 * mib), random.randbytes(5 * mib + 3),
             random.randbytes(mib + 7)]
    up = s3.create_multipart_upload(Bucket="photos", Key="mp/whole",
                                    ContentType="video/mp4",
                                    Metadata={"take": "2"})["UploadId"]
    etags = []
    for i, data in enumerate(parts):
        c = rd if i == 1 else s3
        r = c.upload_part(Bucket="photos", Key="mp/whole", UploadId=up,
                          PartNumber=i + 1, Body=data)
        etags.append(r["ETag"])
    check(all(e == '"%s"' % hashlib.md5(p).hexdigest()
              for e, p in zip(etags, parts)),
          "UploadPart through both gateways: each part's ETag is its MD5")
    lp = rd.list_parts(Bucket="photos", Key="mp/whole", UploadId=up)
    check([(p["PartNumber"], p["ETag"], p["Size"]) for p in lp["Parts"]] ==
          [(i + 1, e, len(d)) for i, (e, d) in enumerate(zip(etags, parts))]
          and not lp["IsTruncated"],
          "ListParts through the other gateway: numbers, ETags, sizes")
    lp = s3.list_parts(Bucket="photos", Key="mp/whole", UploadId=up,
                       MaxParts=1, PartNumberMarker=1)
    check([p["PartNumber"] for p in lp["Parts"]] == [2] and
          lp["IsTruncated"] and lp["NextPartNumberMarker"] == 2,
          "ListParts in pages (max-parts, part-number-marker)", str(lp))
    other = s3.create_multipart_upload(Bucket="photos", Key="mp/other")[
        "UploadId"]
    lu = rd.list_multipart_uploads(Bucket="photos")
    check([(u["Key"], u["UploadId"]) for u in lu["Uploads"]] ==
          [("mp/other", other), ("mp/whole", up)],
          "ListMultipartUploads: both uploads, in key order", str(lu))
    lu = s3.list_multipart_uploads(Bucket="photos", Prefix="mp/w")
    check([u["Key"] for u in lu["Uploads"]] == ["mp/whole"],
          "ListMultipartUploads with a prefix")
    lu = s3.list_multipart_uploads(Bucket="photos", MaxUploads=1)
    check(len(lu["Uploads"]) == 1 and lu["IsTruncated"] and
          lu["NextKeyMarker"] == "mp/other", "ListMultipartUploads in pages")
    lu = s3.list_multipart_uploads(Bucket="photos",
                                   KeyMarker=lu["NextKeyMarker"],
                                   UploadIdMarker=lu["NextUploadIdMarker"])
    check([u["Key"] for u in lu["Uploads"]] == ["mp/whole"] and
          not lu["IsTruncated"], "ListMultipartUploads: the next page")
    expect_error("ListMultipartUploads with a delimiter: NotImplemented",
                 ("NotImplemented", 501), s3.list_multipart_uploads,
                 Bucket="photos", Delimiter="/")
    s3.abort_multipart_upload(Bucket="photos", Key="mp/other",
                              UploadId=other)
    expect_error("DeleteBucket with an upload in progress: BucketNotEmpty",
                 ("BucketNotEmpty", 409), s3.delete_bucket, Bucket="photos")
    bad = [{"PartNumber": 1, "ETag": etags[1]},
           {"PartNumber": 2, "ETag": etags[1]}]
    expect_error("Complete with a wrong ETag: InvalidPart",
                 ("InvalidPart", 400), s3.complete_multipart_upload,
                 Bucket="photos", Key="mp/whole", UploadId=up,
                 MultipartUpload={"Parts": bad})
    rev = [{"PartNumber": 2, "ETag": etags[1]},
           {"PartNumber": 1, "ETag": etags[0]}]
    expect_error("Complete with parts out of order: InvalidPartOrder",
                 ("InvalidPartOrder", 400), s3.complete_multipart_upload,
                 Bucket="photos", Key="mp/whole", UploadId=up,
                 MultipartUpload={"Parts": rev})
    small = [{"PartNumber": 3, "ETag": etags[2]},
             {"PartNumber": 3, "ETag": etags[2]}]
    expect_error("Complete naming a part twice: InvalidPartOrder",
                 ("InvalidPartOrder", 400), s3.complete_multipart_upload,
                 Bucket="photos", Key="mp/whole", UploadId=up,
                 MultipartUpload={"Parts": small})
    r = rd.complete_multipart_upload(
        Bucket="photos", Key="mp/whole", UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                   for i, e in enumerate(etags)]})
    whole = b"".join(parts)
    want = hashlib.md5(b"".join(hashlib.md5(p).digest()
                                for p in parts)).hexdigest() + "-3"
    check(r["ETag"] == '"%s"' % want,
          "CompleteMultipartUpload through the other gateway: the ETag is "
          "the MD5 of the parts' MD5s, -3", r["ETag"])
    for name, c in (("owner", s3), ("reader", rd)):
        g = c.get_object(Bucket="photos", Key="mp/whole")
        check(g["Body"].read() == whole and g["ETag"] == '"%s"' % want and
              g["ContentType"] == "video/mp4" and
              g["Metadata"] == {"take": "2"},
              f"the whole object, its type and metadata, via the {name}")
    a, b = 5 * mib - 10, 10 * mib + 20
    g = rd.get_object(Bucket="photos", Key="mp/whole",
                      Range=f"bytes={a}-{b}")
    check(g["Body"].read() == whole[a:b + 1],
          "a range across three parts")
    expect_error("UploadPart to a completed upload: NoSuchUpload",
                 ("NoSuchUpload", 404), s3.upload_part, Bucket="photos",
                 Key="mp/whole", UploadId=up, PartNumber=4, Body=b"x")
    up2 = s3.create_multipart_upload(Bucket="photos", Key="mp/gone")[
        "UploadId"]
    e1 = s3.upload_part(Bucket="photos", Key="mp/gone", UploadId=up2,
                        PartNumber=1, Body=b"a" * 1000)["ETag"]
    e2 = s3.upload_part(Bucket="photos", Key="mp/gone", UploadId=up2,
                        PartNumber=2, Body=b"b" * 1000)["ETag"]
    expect_error("a part under 5 MiB but the last: EntityTooSmall",
                 ("EntityTooSmall", 400), s3.complete_multipart_upload,
                 Bucket="photos", Key="mp/gone", UploadId=up2,
                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                            {"PartNumber": 2, "ETag": e2}]})
    rd.abort_multipart_upload(Bucket="photos", Key="mp/gone", UploadId=up2)
    expect_error("an aborted upload: NoSuchUpload", ("NoSuchUpload", 404),
                 s3.upload_part, Bucket="photos", Key="mp/gone",
                 UploadId=up2, PartNumber=3, Body=b"x")
    expect_error("no object from an aborted upload", ("NoSuchKey", 404),
                 s3.get_object, Bucket="photos", Key="mp/gone")
    # boto3's own transfer: 8 parts of 5 MiB, four at a time
    from boto3.s3.transfer import TransferConfig
    big = random.randbytes(40 * mib + 5)
    open(ARGS[0], "wb").write(big)
    cfg = TransferConfig(multipart_threshold=5 * mib,
                         multipart_chunksize=5 * mib, max_concurrency=4)
    rd.upload_file(ARGS[0], "photos", "mp/transfer", Config=cfg)
    got = s3.get_object(Bucket="photos", Key="mp/transfer")["Body"].read()
    check(got == big, "boto3 upload_file, 9 parts four at a time through "
          "the other gateway: read back whole")
    s3.delete_object(Bucket="photos", Key="mp/transfer")


def crc_reflected(poly, bits, data):
    """a reflected CRC of @bits with all ones in and out (CRC32C, NVME)"""
    mask = (1 << bits) - 1
    crc = mask
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return (crc ^ mask).to_bytes(bits // 8, "big")


def b64(raw):
    return base64.b64encode(raw).decode()


def raw_put(port, path, body, extra):
    return raw_req(port, "PUT", path, body, extra)


def raw_req(port, method, path, body, extra):
    """a signed request with @extra headers: (status, S3 code, headers)"""
    hdrs = signed_headers(port, method, path, body, extra)
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=15)
    c.request(method, path, body, hdrs)
    r = c.getresponse()
    text = r.read().decode(errors="replace")
    code = text.split("<Code>")[1].split("<")[0] if "<Code>" in text else ""
    return r.status, code, dict((k.lower(), v) for k, v in r.getheaders())


def step_http():
    """Expect on an empty PUT; an early error does not lose its answer"""
    hdrs = signed_headers(OWNER, "PUT", "/photos/empty", b"")
    hdrs.update({"Content-Length": "0", "Expect": "100-continue",
                 "Host": f"127.0.0.1:{OWNER}"})
    sock = socket.create_connection(("127.0.0.1", int(OWNER)), timeout=15)
    sock.sendall(("PUT /photos/empty HTTP/1.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n").encode())
    got = b""
    while got.count(b"\r\n\r\n") < 2:
        more = sock.recv(4096)
        if not more:
            break
        got += more
    sock.close()
    check(got.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200"),
          "an empty PUT with Expect: 100 Continue, then 200 (as S3; "
          "botocore misreads the next answer otherwise)", repr(got[:80]))
    # refused before its 2 MiB body is read: the whole answer arrives
    body = random.randbytes(2 * 1024 * 1024)
    lost = 0
    for _ in range(8):
        hdrs = signed_headers(OWNER, "PUT", "/photos/tagged", body,
                              {"x-amz-tagging": "a=b"})
        hdrs["Host"] = f"127.0.0.1:{OWNER}"
        hdrs["Content-Length"] = str(len(body))
        sock = socket.create_connection(("127.0.0.1", int(OWNER)),
                                        timeout=15)
        head = ("PUT /photos/tagged HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n").encode()
        answer = b""
        try:
            sock.sendall(head + body)
        except OSError:
            pass
        try:
            while b"</Error>" not in answer:
                more = sock.recv(4096)
                if not more:
                    break
                answer += more
        except OSError:
            pass
        sock.close()
        if b"Connection: close" not in answer or b"</Error>" not in answer:
            lost += 1
    check(lost == 0, "8 PUTs of 2 MiB refused before their body is read: "
          "each answer whole, with Connection: close", f"{lost} lost")
    client(OWNER).delete_object(Bucket="photos", Key="empty")


STREAMING = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"


def send_put(port, path, body, req):
    """@body PUT with the headers of the signed @req: (status, S3 code,
    headers in lower case); status 0 if the connection broke"""
    hdrs = dict(req.headers.items())
    hdrs["Content-Length"] = str(len(body))
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=15)
    try:
        c.request("PUT", path, body, hdrs)
        r = c.getresponse()
        text = r.read().decode(errors="replace")
    except (ConnectionError, http.client.HTTPException) as e:
        return 0, str(e), {}
    code = text.split("<Code>")[1].split("<")[0] if "<Code>" in text else ""
    return r.status, code, {k.lower(): v for k, v in r.getheaders()}


def chunked_put(port, path, chunks, decoded=None, corrupt=None, cut=False):
    """a PUT of aws-chunked @chunks (the last one empty), signed as the
    SDKs do (the first chunk after the request's signature): (status,
    S3 code); @corrupt: the index of a chunk whose data change after it
    is signed; @cut: the last chunk never sent"""
    import hmac
    total = sum(len(c) for c in chunks)
    amz = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    req = AWSRequest(method="PUT", url=f"http://127.0.0.1:{port}{path}")
    req.headers["x-amz-content-sha256"] = STREAMING
    req.headers["Content-Encoding"] = "aws-chunked"
    req.headers["x-amz-decoded-content-length"] = str(
        total if decoded is None else decoded)
    req.context["timestamp"] = amz
    SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    amz = req.headers["X-Amz-Date"]
    seed = req.headers["Authorization"].split("Signature=")[1]
    scope = f"{amz[:8]}/us-east-1/s3/aws4_request"
    key = ("AWS4" + SK).encode()
    for part in (amz[:8], "us-east-1", "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    body, prev = b"", seed
    for i, c in enumerate(chunks + [b""]):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz, scope, prev,
                         hashlib.sha256(b"").hexdigest(),
                         hashlib.sha256(c).hexdigest()])
        prev = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        data = c if i != corrupt else b"X" + c[1:]
        if cut and i == len(chunks):
            break
        body += f"{len(c):x};chunk-signature={prev}\r\n".encode() + data + \
            b"\r\n"
    return send_put(port, path, body, req)[:2]


def trailer_put(port, path, chunks, trailer="x-amz-checksum-crc32",
                value=None, send_trailer=True,
                mode="STREAMING-UNSIGNED-PAYLOAD-TRAILER"):
    """a PUT of aws-chunked @chunks without chunk signatures, its CRC32
    (or @value) in the trailer @trailer: (status, S3 code, headers)"""
    data = b"".join(chunks)
    if value is None:
        value = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    body = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n"
                    for c in chunks) + b"0\r\n"
    if send_trailer:
        body += f"{trailer}:{value}\r\n".encode()
    body += b"\r\n"
    req = AWSRequest(method="PUT", url=f"http://127.0.0.1:{port}{path}")
    for k, v in (("x-amz-content-sha256", mode),
                 ("Content-Encoding", "aws-chunked"),
                 ("x-amz-decoded-content-length", str(len(data))),
                 ("x-amz-trailer", trailer)):
        req.headers[k] = v
    SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    return send_put(port, path, body, req)


def step_trailer():
    """aws-chunked bodies without chunk signatures, their checksum in a
    trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER: what the AWS SDKs send
    over TLS, so through a TLS proxy in front of the gateways)"""
    s3 = client(OWNER)
    chunks = [random.randbytes(65536), random.randbytes(3 * 1024 * 1024 + 7)]
    data = b"".join(chunks)
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    for port in (READER, OWNER):
        st, code, h = trailer_put(port, "/photos/trailer", chunks)
        check(st == 200, f"a PUT with its CRC32 in the trailer through "
              f"{port}: 200", f"{st} {code}")
        got = s3.get_object(Bucket="photos", Key="trailer")["Body"].read()
        check(st == 200 and got == data and
              h.get("x-amz-checksum-crc32") == crc,
              f"a PUT with its CRC32 in the trailer through {port}: read "
              f"back, the checksum answered", f"{st} {code} {h}")
    st, code, _ = trailer_put(OWNER, "/photos/trailer", [b"other"],
                              value=crc)
    check(st == 400 and code == "BadDigest",
          "a trailer checksum that does not match: BadDigest", f"{st} {code}")
    st, code, _ = trailer_put(OWNER, "/photos/trailer", [b"other"],
                              send_trailer=False)
    check(st == 400 and code == "IncompleteBody",
          "the trailer missing: IncompleteBody", f"{st} {code}")
    st, code, _ = trailer_put(OWNER, "/photos/trailer", [b"other"],
                              trailer="x-amz-meta-foo", value="1")
    check(st == 400 and code == "InvalidRequest",
          "x-amz-trailer naming no checksum: InvalidRequest", f"{st} {code}")
    st, code, _ = trailer_put(
        OWNER, "/photos/trailer", [b"other"],
        mode="STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")
    check(st == 501 and code == "NotImplemented", "signed chunks with a "
          "trailer: NotImplemented", f"{st} {code}")
    check(s3.get_object(Bucket="photos", Key="trailer")["Body"].read() ==
          data, "none of them changed the object")
    up = s3.create_multipart_upload(Bucket="photos", Key="trailer-mp",
                                    ChecksumAlgorithm="CRC32")["UploadId"]
    part = random.randbytes(5 * 1024 * 1024)
    st, code, h = trailer_put(OWNER, f"/photos/trailer-mp?partNumber=1&"
                              f"uploadId={up}", [part])
    pcrc = base64.b64encode(zlib.crc32(part).to_bytes(4, "big")).decode()
    check(st == 200 and h.get("x-amz-checksum-crc32") == pcrc,
          "an UploadPart of a CRC32 upload with the checksum in its "
          "trailer: taken, the checksum answered", f"{st} {code} {h}")
    done = s3.complete_multipart_upload(
        Bucket="photos", Key="trailer-mp", UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": h["etag"],
                                    "ChecksumCRC32": pcrc}]})
    check(done.get("ChecksumCRC32", "").endswith("-1"),
          "and the upload completes with its composite checksum", str(done))
    s3.delete_object(Bucket="photos", Key="trailer-mp")
    s3.delete_object(Bucket="photos", Key="trailer")


def step_chunked():
    """aws-chunked bodies (STREAMING-AWS4-HMAC-SHA256-PAYLOAD)"""
    s3 = client(READER)
    chunks = [random.randbytes(65536), random.randbytes(1000),
              random.randbytes(3 * 1024 * 1024)]
    st, code = chunked_put(READER, "/photos/chunked", chunks)
    got = s3.get_object(Bucket="photos", Key="chunked")["Body"].read()
    check(st == 200 and got == b"".join(chunks), "an aws-chunked PUT of "
          "three signed chunks through the other gateway: read back",
          f"{st} {code}")
    st, code = chunked_put(OWNER, "/photos/chunked", [b"small"])
    check(st == 200 and s3.get_object(Bucket="photos", Key="chunked")[
        "Body"].read() == b"small", "a small one (in its entry)",
        f"{st} {code}")
    st, code = chunked_put(OWNER, "/photos/chunked", chunks, corrupt=1)
    check(st == 403 and code == "SignatureDoesNotMatch",
          "a chunk whose data are not what was signed: "
          "SignatureDoesNotMatch", f"{st} {code}")
    st, code = chunked_put(OWNER, "/photos/chunked", chunks, cut=True)
    check(st in (0, 400), "the last chunk missing: refused", f"{st} {code}")
    st, code = chunked_put(OWNER, "/photos/chunked", chunks, decoded=5)
    check(st == 400, "x-amz-decoded-content-length smaller than the "
          "chunks: refused", f"{st} {code}")
    st, code = chunked_put(OWNER, "/photos/chunked", chunks,
                           decoded=len(b"".join(chunks)) + 1)
    check(st == 400 and code == "IncompleteBody",
          "x-amz-decoded-content-length larger than the chunks: "
          "IncompleteBody", f"{st} {code}")
    check(s3.get_object(Bucket="photos", Key="chunked")["Body"].read() ==
          b"small", "none of them changed the object")
    up = s3.create_multipart_upload(Bucket="photos", Key="chunked-mp")[
        "UploadId"]
    part = random.randbytes(5 * 1024 * 1024)
    st, code = chunked_put(OWNER, f"/photos/chunked-mp?partNumber=1&"
                           f"uploadId={up}", [part[:2 << 20], part[2 << 20:]])
    lp = s3.list_parts(Bucket="photos", Key="chunked-mp", UploadId=up)
    check(st == 200 and lp["Parts"][0]["ETag"] ==
          '"%s"' % hashlib.md5(part).hexdigest(),
          "an aws-chunked UploadPart: its ETag the MD5 of the data",
          f"{st} {code}")
    s3.abort_multipart_upload(Bucket="photos", Key="chunked-mp", UploadId=up)
    s3.delete_object(Bucket="photos", Key="chunked")


def step_checksums():
    """x-amz-checksum-*: checked on PUT and UploadPart, composite at the end"""
    s3, rd = client(OWNER), client(READER)
    data = random.randbytes(300000)
    for alg, key in (("CRC32", "ChecksumCRC32"), ("SHA1", "ChecksumSHA1"),
                     ("SHA256", "ChecksumSHA256")):
        r = rd.put_object(Bucket="photos", Key="sum", Body=data,
                          ChecksumAlgorithm=alg)
        want = {"CRC32": b64(zlib.crc32(data).to_bytes(4, "big")),
                "SHA1": b64(hashlib.sha1(data).digest()),
                "SHA256": b64(hashlib.sha256(data).digest())}[alg]
        check(r.get(key) == want and s3.get_object(
            Bucket="photos", Key="sum")["Body"].read() == data,
            f"PutObject with a {alg} checksum through the other gateway: "
            "checked, answered back")
    sums = {"crc32c": crc_reflected(0x82F63B78, 32, data),
            "crc64nvme": crc_reflected(0x9A6C9329AC4BC9B5, 64, data)}
    for name, raw in sums.items():
        st, code, h = raw_put(OWNER, "/photos/sum", data,
                              {f"x-amz-checksum-{name}": b64(raw)})
        check(st == 200 and h.get(f"x-amz-checksum-{name}") == b64(raw),
              f"a PUT with the right {name}: stored", f"{st} {code}")
        bad = bytes([raw[0] ^ 1]) + raw[1:]
        st, code, h = raw_put(OWNER, "/photos/sum", data,
                              {f"x-amz-checksum-{name}": b64(bad)})
        check(st == 400 and code == "BadDigest",
              f"a PUT with a wrong {name}: BadDigest", f"{st} {code}")
    check(s3.get_object(Bucket="photos", Key="sum")["Body"].read() == data,
          "the object refused for its checksum is not stored")
    st, code, _ = raw_put(OWNER, "/photos/sum", data, {
        "x-amz-checksum-crc32c": b64(sums["crc32c"]),
        "x-amz-checksum-sha1": b64(hashlib.sha1(data).digest())})
    check(st == 400 and code == "InvalidRequest",
          "two checksums: InvalidRequest", f"{st} {code}")
    st, code, _ = raw_put(OWNER, "/photos/sum", data,
                          {"x-amz-sdk-checksum-algorithm": "CRC32C"})
    check(st == 400 and code == "InvalidRequest",
          "x-amz-sdk-checksum-algorithm without its checksum: "
          "InvalidRequest", f"{st} {code}")
    # multipart: every part with the upload's algorithm, composite at the end
    mib = 1024 * 1024
    parts = [random.randbytes(5 * mib), random.randbytes(mib + 1)]
    up = s3.create_multipart_upload(Bucket="photos", Key="mpsum",
                                    ChecksumAlgorithm="SHA256")["UploadId"]
    expect_error("a part without the upload's SHA256: InvalidRequest",
                 ("InvalidRequest", 400), s3.upload_part, Bucket="photos",
                 Key="mpsum", UploadId=up, PartNumber=1, Body=parts[0])
    done = []
    for i, p in enumerate(parts):
        r = (rd if i else s3).upload_part(
            Bucket="photos", Key="mpsum", UploadId=up, PartNumber=i + 1,
            Body=p, ChecksumAlgorithm="SHA256")
        done.append({"PartNumber": i + 1, "ETag": r["ETag"],
                     "ChecksumSHA256": r["ChecksumSHA256"]})
    check([d["ChecksumSHA256"] for d in done] ==
          [b64(hashlib.sha256(p).digest()) for p in parts],
          "UploadPart with SHA256 through both gateways: answered back")
    lost = [{"PartNumber": d["PartNumber"], "ETag": d["ETag"]} for d in done]
    expect_error("Complete without the parts' checksums: InvalidRequest",
                 ("InvalidRequest", 400), s3.complete_multipart_upload,
                 Bucket="photos", Key="mpsum", UploadId=up,
                 MultipartUpload={"Parts": lost})
    wrong = [dict(d) for d in done]
    wrong[1]["ChecksumSHA256"] = done[0]["ChecksumSHA256"]
    expect_error("Complete with a part's checksum wrong: InvalidPart",
                 ("InvalidPart", 400), s3.complete_multipart_upload,
                 Bucket="photos", Key="mpsum", UploadId=up,
                 MultipartUpload={"Parts": wrong})
    r = rd.complete_multipart_upload(Bucket="photos", Key="mpsum",
                                     UploadId=up,
                                     MultipartUpload={"Parts": done})
    comp = b64(hashlib.sha256(b"".join(hashlib.sha256(p).digest()
                                       for p in parts)).digest()) + "-2"
    check(r.get("ChecksumSHA256") == comp and s3.get_object(
        Bucket="photos", Key="mpsum")["Body"].read() == b"".join(parts),
        "Complete: the composite SHA256 of the parts', -2; read back")
    st, code, _ = raw_req(OWNER, "POST", "/photos/full?uploads", b"", {
        "x-amz-checksum-algorithm": "CRC32",
        "x-amz-checksum-type": "FULL_OBJECT"})
    check(st == 501 and code == "NotImplemented",
          "x-amz-checksum-type FULL_OBJECT: NotImplemented", f"{st} {code}")
    for k in ("sum", "mpsum"):
        s3.delete_object(Bucket="photos", Key=k)


def step_copy_delete():
    """CopyObject, UploadPartCopy and DeleteObjects"""
    s3, rd = client(OWNER), client(READER)
    mib = 1024 * 1024
    s3.create_bucket(Bucket="other")
    big = open(ARGS[0], "rb").read()
    r = rd.copy_object(Bucket="other", Key="copy of big", CopySource={
        "Bucket": "photos", "Key": "big.bin"})
    want = '"%s"' % hashlib.md5(big).hexdigest()
    g = s3.get_object(Bucket="other", Key="copy of big")
    check(r["CopyObjectResult"]["ETag"] == want and
          g["Body"].read() == big and g["ETag"] == want,
          "CopyObject of 9 MiB into another bucket through the other "
          "gateway: read back, ETag the MD5")
    s3.put_object(Bucket="photos", Key="meta", Body=b"m" * 100,
                  ContentType="text/x-a", Metadata={"one": "1"})
    s3.copy_object(Bucket="photos", Key="meta copy",
                   CopySource="photos/meta")
    h = rd.head_object(Bucket="photos", Key="meta copy")
    check(h["ContentType"] == "text/x-a" and h["Metadata"] == {"one": "1"},
          "CopyObject keeps the type and metadata (COPY)")
    s3.copy_object(Bucket="photos", Key="meta copy", CopySource="photos/meta",
                   MetadataDirective="REPLACE", ContentType="text/x-b",
                   Metadata={"two": "2"})
    h = rd.head_object(Bucket="photos", Key="meta copy")
    check(h["ContentType"] == "text/x-b" and h["Metadata"] == {"two": "2"},
          "CopyObject with REPLACE takes the request's")
    expect_error("an object copied onto itself unchanged: InvalidRequest",
                 ("InvalidRequest", 400), s3.copy_object, Bucket="photos",
                 Key="meta", CopySource="photos/meta")
    expect_error("a copy of a missing key: NoSuchKey", ("NoSuchKey", 404),
                 s3.copy_object, Bucket="photos", Key="x",
                 CopySource="photos/nothing")
    expect_error("a copy from a missing bucket: NoSuchBucket",
                 ("NoSuchBucket", 404), s3.copy_object, Bucket="photos",
                 Key="x", CopySource="nobucket/x")
    expect_error("a copy whose if-match fails: PreconditionFailed",
                 ("PreconditionFailed", 412), s3.copy_object,
                 Bucket="photos", Key="x", CopySource="photos/meta",
                 CopySourceIfMatch='"00000000000000000000000000000000"')
    expect_error("a copy of a version: NotImplemented",
                 ("NotImplemented", 501), s3.copy_object, Bucket="photos",
                 Key="x", CopySource="photos/meta?versionId=3")
    # a multipart object from parts copied out of the 9 MiB one
    up = rd.create_multipart_upload(Bucket="other", Key="spliced")[
        "UploadId"]
    e1 = rd.upload_part_copy(Bucket="other", Key="spliced", UploadId=up,
                             PartNumber=1, CopySource="photos/big.bin",
                             CopySourceRange=f"bytes=0-{5 * mib - 1}")
    e2 = s3.upload_part_copy(Bucket="other", Key="spliced", UploadId=up,
                             PartNumber=2, CopySource="photos/big.bin",
                             CopySourceRange=f"bytes={mib}-{2 * mib}")
    expect_error("UploadPartCopy of a range past the end: InvalidArgument",
                 ("InvalidArgument", 400), s3.upload_part_copy,
                 Bucket="other", Key="spliced", UploadId=up, PartNumber=3,
                 CopySource="photos/big.bin",
                 CopySourceRange=f"bytes={len(big)}-{len(big) + 5}")
    parts = [{"PartNumber": 1, "ETag": e1["CopyPartResult"]["ETag"]},
             {"PartNumber": 2, "ETag": e2["CopyPartResult"]["ETag"]}]
    s3.complete_multipart_upload(Bucket="other", Key="spliced", UploadId=up,
                                 MultipartUpload={"Parts": parts})
    got = rd.get_object(Bucket="other", Key="spliced")["Body"].read()
    check(got == big[:5 * mib] + big[mib:2 * mib + 1],
          "UploadPartCopy with ranges, through both gateways: the object "
          "is the ranges")
    # DeleteObjects: 300 keys, some of them missing, through the reader
    keys = [f"del/{i:03d} &<x>" for i in range(300)]
    for k in keys[:250]:
        s3.put_object(Bucket="other", Key=k, Body=k.encode())
    r = rd.delete_objects(Bucket="other", Delete={
        "Objects": [{"Key": k} for k in keys]})
    left = s3.list_objects_v2(Bucket="other", Prefix="del/")["KeyCount"]
    check(sorted(d["Key"] for d in r["Deleted"]) == keys and
          not r.get("Errors") and left == 0,
          "DeleteObjects of 300 keys (50 absent, with XML's special "
          "characters) through the other gateway: all reported, none left")
    s3.put_object(Bucket="other", Key="q", Body=b"q")
    r = s3.delete_objects(Bucket="other", Delete={
        "Objects": [{"Key": "q"}], "Quiet": True})
    check(not r.get("Deleted") and not r.get("Errors") and
          s3.list_objects_v2(Bucket="other", Prefix="q")["KeyCount"] == 0,
          "DeleteObjects in quiet mode: deleted, nothing listed")
    expect_error("DeleteObjects of 1001 keys: MalformedXML",
                 ("MalformedXML", 400), s3.delete_objects, Bucket="other",
                 Delete={"Objects": [{"Key": str(i)} for i in range(1001)]})
    expect_error("DeleteObjects naming a version: NotImplemented",
                 ("NotImplemented", 501), s3.delete_objects, Bucket="other",
                 Delete={"Objects": [{"Key": "a", "VersionId": "7"}]})
    hdrs = signed_headers(OWNER, "POST", "/other?delete",
                          b"<Delete><Object><Key>a</Key></Object></Delete>")
    c = http.client.HTTPConnection("127.0.0.1", int(OWNER), timeout=15)
    c.request("POST", "/other?delete",
              b"<Delete><Object><Key>a</Key></Object></Delete>", hdrs)
    check(c.getresponse().status == 400,
          "DeleteObjects without Content-MD5 or a checksum: 400")
    s3.put_object(Bucket="other", Key="a", Body=b"a")
    body = b"<Delete><Object><Key>a</Key></Object></Delete>"
    st, code, _ = raw_req(OWNER, "POST", "/other?delete", body, {
        "x-amz-checksum-crc32": b64(zlib.crc32(body).to_bytes(4, "big")),
        "x-amz-sdk-checksum-algorithm": "CRC32"})
    check(st == 200 and s3.list_objects_v2(
        Bucket="other", Prefix="a")["KeyCount"] == 0,
        "DeleteObjects with a CRC32 instead of Content-MD5 (current SDKs)",
        f"{st} {code}")
    for k in ("copy of big", "spliced"):
        s3.delete_object(Bucket="other", Key=k)
    s3.delete_bucket(Bucket="other")
    for k in ("meta", "meta copy"):
        s3.delete_object(Bucket="photos", Key=k)


# ---- owner failover (test 193): OWNER made the bucket, READER and
# ARGS[0] (a third gateway's port) write through it or take it over

MIB = 1024 * 1024


def step_fo_setup():
    s3 = client(OWNER)
    s3.create_bucket(Bucket="fover")
    s3.put_object(Bucket="fover", Key="before", Body=b"written by the owner")
    up = s3.create_multipart_upload(Bucket="fover", Key="mp")["UploadId"]
    part = random.randbytes(5 * MIB)
    e = s3.upload_part(Bucket="fover", Key="mp", UploadId=up, PartNumber=1,
                       Body=part)["ETag"]
    open(ARGS[0], "w").write(f"{up} {e}\n")
    open(ARGS[0] + ".part1", "wb").write(part)
    print("bucket fo, an object and part 1 of an upload through its owner")


def step_fo_member():
    rd = client(READER)
    expect_error("the owner's sheep a member without its gateway: a write "
                 "is ServiceUnavailable, the bucket stays",
                 ("ServiceUnavailable", 503), rd.put_object, Bucket="fover",
                 Key="x", Body=b"x")
    check(rd.get_object(Bucket="fover", Key="before")["Body"].read() ==
          b"written by the owner", "reads go on")


def step_fo_owner_writes():
    s3 = client(OWNER)
    s3.put_object(Bucket="fover", Key="owner", Body=b"still the owner")
    check(s3.get_object(Bucket="fover", Key="owner")["Body"].read() ==
          b"still the owner", "the owner writes and reads back")


def step_fo_takeover():
    """the owner's sheep gone: a write through READER moves the bucket"""
    rd = client(READER)
    rd.put_object(Bucket="fover", Key="after", Body=b"written after")
    check(rd.get_object(Bucket="fover", Key="after")["Body"].read() ==
          b"written after", "the owner gone: a PUT through another gateway "
          "takes the bucket over")
    up, e1 = open(ARGS[0]).read().split()
    part2 = random.randbytes(MIB + 3)
    e2 = rd.upload_part(Bucket="fover", Key="mp", UploadId=up, PartNumber=2,
                        Body=part2)["ETag"]
    lp = rd.list_parts(Bucket="fover", Key="mp", UploadId=up)
    check([p["PartNumber"] for p in lp["Parts"]] == [1, 2],
          "the upload begun at the old owner lists both parts")
    rd.complete_multipart_upload(
        Bucket="fover", Key="mp", UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                   {"PartNumber": 2, "ETag": e2}]})
    want = open(ARGS[0] + ".part1", "rb").read() + part2
    open(ARGS[0] + ".mp", "wb").write(want)
    check(rd.get_object(Bucket="fover", Key="mp")["Body"].read() == want,
          "a multipart upload begun at the killed owner completes through "
          "the new one")


def step_fo_after():
    """every gateway (OWNER is the old owner, started again) writes"""
    want = open(ARGS[1] + ".mp", "rb").read()
    for port in (OWNER, READER, ARGS[0]):
        c = client(port)
        c.put_object(Bucket="fover", Key=f"via-{port}", Body=port.encode())
        for q in (OWNER, READER, ARGS[0]):
            g = client(q).get_object(Bucket="fover", Key=f"via-{port}")
            if g["Body"].read() != port.encode():
                fail(f"via-{port} read through {q}")
        if c.get_object(Bucket="fover", Key="mp")["Body"].read() != want:
            fail(f"mp through {port}")
    keys = [o["Key"] for o in client(ARGS[0]).list_objects_v2(
        Bucket="fover")["Contents"]]
    check(keys == sorted(["before", "after", "mp"] +
                         [f"via-{p}" for p in (OWNER, READER, ARGS[0])]),
          "writes through every gateway, read back through every gateway, "
          "one listing")


def step_fo_race():
    """the owner gone: two gateways write at once, one takes it over"""
    import threading
    errs = []

    def put(c, port, key):
        try:
            c.put_object(Bucket="fover", Key=key, Body=key.encode() * 1000)
        except Exception as e:
            errs.append(f"{key} through {port}: {e}")
    # boto3 makes clients in one thread at a time; each thread its own
    ts = [threading.Thread(target=put, args=(client(p), p, f"race-{p}-{i}"))
          for p in (OWNER, ARGS[0]) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(not errs, "the owner gone: 8 PUTs through two gateways at once "
          "all succeed", "; ".join(errs))
    for p in (OWNER, ARGS[0]):
        for i in range(4):
            k = f"race-{p}-{i}"
            got = client(ARGS[0] if p == OWNER else OWNER).get_object(
                Bucket="fover", Key=k)["Body"].read()
            if got != k.encode() * 1000:
                fail(f"{k} read back wrong")
    print("each reads back through the other gateway")


def step_reread():
    s3 = client(READER)
    big = open(ARGS[0], "rb").read()
    check(s3.get_object(Bucket="photos", Key="big.bin")["Body"].read() == big,
          "after a whole-cluster restart: 9 MiB read back")
    check(s3.get_object(Bucket="photos", Key="atom")["Body"].read() ==
          open(ARGS[1], "rb").read(),
          "a PUT cut by SIGKILL: the object is the old one, whole")


def step_put_atom():
    s3 = client(OWNER)
    data = random.randbytes(5 * 1024 * 1024)
    s3.put_object(Bucket="photos", Key="atom", Body=data)
    open(ARGS[0], "wb").write(data)
    print("the object 'atom' written")


def partial_put(port, path, body, n, flag):
    """a PUT of @body signed whole, of which only @n bytes are sent; then
    @flag is written and the connection held for a minute"""
    hdrs = signed_headers(port, "PUT", path, body)
    hdrs["Content-Length"] = str(len(body))
    hdrs["Host"] = f"127.0.0.1:{port}"
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
    head = f"PUT {path} HTTP/1.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    s.sendall(head.encode() + body[:n])
    open(flag, "w").write("sent\n")
    time.sleep(60)


def step_cut_put():
    """half of a 64 MiB PUT, then wait to be killed with the gateway"""
    partial_put(OWNER, "/photos/atom", random.randbytes(64 * 1024 * 1024),
                32 * 1024 * 1024, ARGS[0])


# ---- test 195: faults (ARGS[0]: a directory of the test's own)

def step_rot_put():
    """a bucket, and a 3 MiB object whose data the test will rot"""
    s3 = client(OWNER)
    s3.create_bucket(Bucket="faults")
    data = random.randbytes(3 * 1024 * 1024)
    s3.put_object(Bucket="faults", Key="rot", Body=data)
    open(os.path.join(ARGS[0], "rot"), "wb").write(data)
    print("a 3 MiB object written")


def step_rot_get():
    """the object reads right through both gateways, ranges too"""
    data = open(os.path.join(ARGS[0], "rot"), "rb").read()
    for port in (OWNER, READER):
        s3 = client(port)
        got = s3.get_object(Bucket="faults", Key="rot")["Body"].read()
        part = s3.get_object(Bucket="faults", Key="rot",
                             Range="bytes=4000-1048999")["Body"].read()
        check(got == data and part == data[4000:1049000],
              f"the object reads right through the gateway on {port}")


def step_mp_start():
    """an upload and its part 1 through the gateway that is not the owner,
    then part 2 sent slowly through it: the test kills that gateway"""
    rd = client(READER)
    up = rd.create_multipart_upload(Bucket="faults", Key="mp")["UploadId"]
    p1 = random.randbytes(5 * 1024 * 1024)
    e1 = rd.upload_part(Bucket="faults", Key="mp", PartNumber=1,
                        UploadId=up, Body=p1)["ETag"]
    p2 = random.randbytes(6 * 1024 * 1024)
    d = ARGS[0]
    open(os.path.join(d, "mp.p1"), "wb").write(p1)
    open(os.path.join(d, "mp.p2"), "wb").write(p2)
    open(os.path.join(d, "mp.id"), "w").write(f"{up} {e1}\n")
    partial_put(READER, f"/faults/mp?partNumber=2&uploadId={up}", p2,
                3 * 1024 * 1024, os.path.join(d, "mp.sent"))


def step_mp_finish():
    """part 2 again and the completion through the owner"""
    d = ARGS[0]
    up, e1 = open(os.path.join(d, "mp.id")).read().split()
    p1 = open(os.path.join(d, "mp.p1"), "rb").read()
    p2 = open(os.path.join(d, "mp.p2"), "rb").read()
    s3 = client(OWNER)
    e2 = s3.upload_part(Bucket="faults", Key="mp", PartNumber=2,
                        UploadId=up, Body=p2)["ETag"]
    s3.complete_multipart_upload(
        Bucket="faults", Key="mp", UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                   {"PartNumber": 2, "ETag": e2}]})
    step_mp_read((OWNER,))


def step_mp_read(ports=(OWNER, READER)):
    """the completed upload reads right"""
    d = ARGS[0]
    p1 = open(os.path.join(d, "mp.p1"), "rb").read()
    p2 = open(os.path.join(d, "mp.p2"), "rb").read()
    for port in ports:
        got = client(port).get_object(Bucket="faults", Key="mp")
        check(got["Body"].read() == p1 + p2,
              f"the upload completed through the owner reads right "
              f"through {port}")


def step_slow_put():
    """a PUT of 4 MiB through the owner that stops after 1 MiB"""
    partial_put(OWNER, "/faults/slow", random.randbytes(4 * 1024 * 1024),
                1024 * 1024, os.path.join(ARGS[0], "slow.sent"))


def step_fill():
    """8 MiB objects until a PUT fails: 507 InsufficientStorage, never
    another error; what was stored is still listed and read"""
    s3 = client(OWNER)
    stored = {}
    for n in range(64):
        data = random.randbytes(8 * 1024 * 1024)
        key = f"fill/{n:03d}"
        try:
            s3.put_object(Bucket="faults", Key=key, Body=data)
        except botocore.exceptions.ClientError as e:
            code = (e.response["Error"]["Code"],
                    e.response["ResponseMetadata"]["HTTPStatusCode"])
            check(code == ("InsufficientStorage", 507),
                  f"a PUT into a full cluster: InsufficientStorage (507) "
                  f"after {len(stored)} objects", str(code))
            break
        stored[key] = hashlib.md5(data).hexdigest()
        if n == 0:
            open(os.path.join(ARGS[0], "fill.000"), "wb").write(data)
    else:
        fail("64 objects of 8 MiB fit: the stores are not full")
    open(os.path.join(ARGS[0], "fill.count"), "w").write(f"{len(stored)}\n")
    check(len(stored) >= 1, "some objects fit before the cluster was full")
    expect_error("another PUT: InsufficientStorage again",
                 ("InsufficientStorage", 507), s3.put_object,
                 Bucket="faults", Key="fill/more",
                 Body=random.randbytes(8 * 1024 * 1024))
    for port in (OWNER, READER):
        c = client(port)
        keys = [o["Key"] for o in c.list_objects_v2(
            Bucket="faults", Prefix="fill/")["Contents"]]
        check(keys == sorted(stored), f"a full cluster lists what it "
              f"stored through {port}", str(keys))
        for key, md5 in stored.items():
            got = c.get_object(Bucket="faults", Key=key)["Body"].read()
            if hashlib.md5(got).hexdigest() != md5:
                fail(f"{key} through {port}: other bytes")
        print(f"a full cluster serves every stored object through {port}")
    step_rot_get()


def step_hold_get():
    """a GET of fill/000 through the reader that takes 64 KiB and stalls
    until the test says go (the object deleted and its room reclaimed
    meanwhile), then reads on: cut short, never other bytes"""
    d = ARGS[0]
    path = "/faults/fill/000"
    want = open(os.path.join(d, "fill.000"), "rb").read()
    hdrs = signed_headers(READER, "GET", path, b"")
    hdrs["Host"] = f"127.0.0.1:{READER}"
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
    s.settimeout(60)
    s.connect(("127.0.0.1", int(READER)))
    s.sendall((f"GET {path} HTTP/1.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, body = buf.split(b"\r\n\r\n", 1)
    check(head.startswith(b"HTTP/1.1 200") and
          f"Content-Length: {len(want)}".encode() in head,
          "a GET of an 8 MiB object begins", head.decode(errors="replace"))
    while len(body) < 65536:
        body += s.recv(65536)
    open(os.path.join(d, "hold.sent"), "w").write("sent\n")
    while not os.path.exists(os.path.join(d, "hold.go")):
        time.sleep(0.1)
    while True:
        try:
            got = s.recv(1 << 20)
        except (ConnectionResetError, socket.timeout):
            break
        if not got:
            break
        body += got
    check(len(body) < len(want), "a GET that outlasted the grace period, "
          "its object deleted and the room reclaimed, is cut short",
          f"{len(body)} of {len(want)} bytes")
    check(body == want[:len(body)], f"the {len(body)} bytes it served "
          "are the object's own")


def step_empty():
    """every fill/ object deleted"""
    s3 = client(OWNER)
    keys = [o["Key"] for o in s3.list_objects_v2(
        Bucket="faults", Prefix="fill/")["Contents"]]
    r = s3.delete_objects(Bucket="faults", Delete={
        "Objects": [{"Key": k} for k in keys]})
    check(len(r.get("Deleted", [])) == len(keys) and not r.get("Errors"),
          f"the {len(keys)} fill/ objects deleted")


def step_refill():
    """as many 8 MiB objects as the full cluster held, stored again in the
    room their deletion gave back, and read right"""
    n = int(open(os.path.join(ARGS[0], "fill.count")).read())
    s3 = client(OWNER)
    stored = {}
    for i in range(n):
        data = random.randbytes(8 * 1024 * 1024)
        key = f"refill/{i:03d}"
        s3.put_object(Bucket="faults", Key=key, Body=data)
        stored[key] = hashlib.md5(data).hexdigest()
    print(f"{n} objects of 8 MiB stored again in the reclaimed room")
    for port in (OWNER, READER):
        c = client(port)
        for key, md5 in stored.items():
            got = c.get_object(Bucket="faults", Key=key)["Body"].read()
            check(hashlib.md5(got).hexdigest() == md5,
                  f"{key} reads right through {port}")


def stores_used():
    """bytes used on the three stores' tmpfs ($T/0..2, beside ARGS[0])"""
    total = 0
    for i in range(3):
        st = os.statvfs(os.path.join(ARGS[0], "..", str(i)))
        total += (st.f_blocks - st.f_bfree) * st.f_frsize
    return total


def given_back(what, peak, least):
    """wait until @least bytes of the stores came back from @peak"""
    for _ in range(300):
        if stores_used() <= peak - least:
            print(f"{what}: {(peak - stores_used()) >> 20} MiB came back")
            return
        time.sleep(0.1)
    fail(f"{what}: the room did not come back "
         f"({(peak - stores_used()) >> 20} MiB of {least >> 20})")


def step_slow_commit():
    """a 9 MiB PUT that stalls halfway for longer than the grace period
    while other PUTs commit (each sweeps the room given out before it):
    the stalled PUT's room is never reclaimed under it, and it reads
    right once it completes"""
    s3 = client(OWNER)
    body = random.randbytes(9 * 1024 * 1024)
    path = "/faults/stalled"
    hdrs = signed_headers(OWNER, "PUT", path, body)
    hdrs["Content-Length"] = str(len(body))
    hdrs["Host"] = f"127.0.0.1:{OWNER}"
    c = socket.create_connection(("127.0.0.1", int(OWNER)), timeout=30)
    c.sendall((f"PUT {path} HTTP/1.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n").encode() +
        body[:5 * 1024 * 1024])
    for i in range(5):
        s3.put_object(Bucket="faults", Key=f"past/{i}",
                      Body=random.randbytes(8192))
        time.sleep(1)
    c.sendall(body[5 * 1024 * 1024:])
    answer = c.recv(4096)
    c.close()
    check(answer.startswith(b"HTTP/1.1 200"), "a PUT stalled past the "
          "grace period while others committed completes",
          answer[:200].decode(errors="replace"))
    for port in (OWNER, READER):
        got = client(port).get_object(Bucket="faults", Key="stalled")
        check(got["Body"].read() == body, f"and reads right through {port}")


def step_kill_put():
    """room made (objects deleted and two chunks at least reclaimed: the
    stores hold whole 4 MiB chunks, and the cut PUT and the object beside
    it take five), then a 32 MiB PUT through the owner, cut after 16 MiB:
    the test kills the owner's sheep meanwhile"""
    s3 = client(OWNER)
    peak = stores_used()
    for k in ("stalled", "left", "mp", "rot"):
        s3.delete_object(Bucket="faults", Key=k)
    given_back("objects deleted to make room", peak,
               2 * 3 * 4 * 1024 * 1024)
    partial_put(OWNER, "/faults/cut", random.randbytes(32 * 1024 * 1024),
                16 * 1024 * 1024, os.path.join(ARGS[0], "kill.sent"))


def step_kill_commit():
    """an object committed after the cut PUT's room was given out"""
    data = random.randbytes(64 * 1024)
    client(OWNER).put_object(Bucket="faults", Key="done", Body=data)
    open(os.path.join(ARGS[0], "done"), "wb").write(data)
    print("an object committed beside the PUT in progress")


def step_kill_after():
    """after the owner's restart: the cut PUT invisible, the committed
    object whole, through both gateways; then a write, which takes the
    bucket back to the restarted gateway (whose reclaimer then sweeps
    the cut PUT's room)"""
    data = open(os.path.join(ARGS[0], "done"), "rb").read()
    for port in (OWNER, READER):
        c = client(port)
        expect_error(f"the PUT cut by the owner's SIGKILL is not there "
                     f"through {port}", ("404", 404), c.head_object,
                     Bucket="faults", Key="cut")
        got = c.get_object(Bucket="faults", Key="done")["Body"].read()
        check(got == data, f"the object committed beside it reads right "
              f"through {port}")
    client(OWNER).put_object(Bucket="faults", Key="after-restart",
                             Body=random.randbytes(8192))
    print("a write through the restarted owner")


def step_mp_reclaim():
    """the room of an aborted upload, of a part left out of a completion
    and of an overwritten object comes back past the grace period (each
    holds at least one whole 4 MiB chunk, in 3 copies, more than is
    waited for: commits write index pages too); what is kept reads
    right"""
    s3 = client(OWNER)
    for k in [o["Key"] for o in s3.list_objects_v2(
            Bucket="faults", Prefix="refill/").get("Contents", [])]:
        s3.delete_object(Bucket="faults", Key=k)
    time.sleep(4)       # the grace period (2 s) and a reclaimer's round
    chunk3 = 3 * 4 * 1024 * 1024
    nine = [random.randbytes(9 * 1024 * 1024) for _ in range(2)]
    up = s3.create_multipart_upload(Bucket="faults", Key="ab")["UploadId"]
    for n, body in enumerate(nine, 1):
        s3.upload_part(Bucket="faults", Key="ab", PartNumber=n,
                       UploadId=up, Body=body)
    peak = stores_used()
    s3.abort_multipart_upload(Bucket="faults", Key="ab", UploadId=up)
    given_back("an aborted upload of 18 MiB", peak, 2 * chunk3)

    rd = client(READER)
    up = rd.create_multipart_upload(Bucket="faults", Key="left")["UploadId"]
    tail = random.randbytes(1024 * 1024)
    out = random.randbytes(13 * 1024 * 1024)    # 2 whole chunks at least
    etags = [rd.upload_part(Bucket="faults", Key="left", PartNumber=n,
                            UploadId=up, Body=body)["ETag"]
             for n, body in enumerate([nine[0], out, tail], 1)]
    peak = stores_used()
    rd.complete_multipart_upload(
        Bucket="faults", Key="left", UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etags[0]},
                                   {"PartNumber": 3, "ETag": etags[2]}]})
    given_back("a 13 MiB part left out of a completion", peak, chunk3)
    got = rd.get_object(Bucket="faults", Key="left")["Body"].read()
    check(got == nine[0] + tail, "the completed object reads right")

    # 17 MiB hold 3 whole chunks wherever they start; the new object is
    # small enough to live in its entry, so that nothing else grows
    s3.put_object(Bucket="faults", Key="over",
                  Body=random.randbytes(17 * 1024 * 1024))
    peak = stores_used()
    small = random.randbytes(1000)
    s3.put_object(Bucket="faults", Key="over", Body=small)
    given_back("a 17 MiB object overwritten", peak, 2 * chunk3)
    for c in (s3, rd):
        got = c.get_object(Bucket="faults", Key="over")["Body"].read()
        check(got == small, "the object overwritten reads the new bytes")


def with_redundancy(c, value):
    """@c's CreateBucket says x-kelpie-bucket-redundancy: @value"""
    def add(request, **kw):
        request.headers["x-kelpie-bucket-redundancy"] = value
    c.meta.events.register("before-sign.s3.CreateBucket", add)
    return c


def step_redundancy():
    """buckets whose data are 2:1 coded or in 2 copies; refusals"""
    data = random.randbytes(9 * 1024 * 1024 + 5)
    with_redundancy(client(OWNER), "2:1").create_bucket(Bucket="coded")
    with_redundancy(client(OWNER), "2").create_bucket(Bucket="two")
    for b in ("coded", "two"):
        client(OWNER).put_object(Bucket=b, Key="k", Body=data)
        got = client(READER).get_object(Bucket=b, Key="k")["Body"].read()
        check(got == data, f"a bucket created with its redundancy ({b}): "
              "9 MiB read back through the other gateway")
    for bad in ("4:2", "3:1", "0", "32", "2:", "x"):
        expect_error(f"x-kelpie-bucket-redundancy {bad}: InvalidArgument",
                     ("InvalidArgument", 400),
                     with_redundancy(client(OWNER), bad).create_bucket,
                     Bucket="refused")
    names = [b["Name"] for b in client(OWNER).list_buckets()["Buckets"]]
    check("refused" not in names, "no bucket made by a refused redundancy")


def step_redundancy_clean():
    for b in ("coded", "two"):
        client(OWNER).delete_object(Bucket=b, Key="k")
        client(OWNER).delete_bucket(Bucket=b)
    print("the buckets with their own redundancy deleted")


DOMAIN = "s3.kelpie.test"
_getaddrinfo = socket.getaddrinfo


def _resolve(host, *a, **kw):
    """BUCKET.s3.kelpie.test is this host: no DNS in the test"""
    if isinstance(host, str) and (host == DOMAIN or
                                  host.endswith("." + DOMAIN)):
        host = "127.0.0.1"
    return _getaddrinfo(host, *a, **kw)


def client_as(port, sig="s3v4", style="path", sk=SK):
    socket.getaddrinfo = _resolve
    host = DOMAIN if style == "virtual" else "127.0.0.1"
    return boto3.client(
        "s3", endpoint_url=f"http://{host}:{port}",
        aws_access_key_id=AK, aws_secret_access_key=sk,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": style},
                      signature_version=sig,
                      retries={"max_attempts": 1}))


def step_sigv2_vhost():
    """SigV2 (headers, presigned), virtual-host style, and both"""
    data = random.randbytes(300 * 1024)
    v2, v2r = client_as(OWNER, "s3"), client_as(READER, "s3")
    v2.put_object(Bucket="photos", Key="v2/a", Body=data,
                  Metadata={"sig": "two"})
    g = v2r.get_object(Bucket="photos", Key="v2/a", Range="bytes=10-99")
    check(g["Body"].read() == data[10:100] and
          g["Metadata"] == {"sig": "two"},
          "SigV2: a PUT through the owner, a ranged GET through the other")
    # the other gateway relays a write (the client's signature checked
    # by the owner); the subresources uploadId and partNumber are signed:
    # parts through both (botocore's SigV2 signs "?uploads" twice in
    # CreateMultipartUpload, so SigV4 creates the upload)
    r = v2r.put_object(Bucket="photos", Key="v2/b", Body=data)
    check(r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest(),
          "SigV2: a PUT relayed by the other gateway")
    part = random.randbytes(5 * 1024 * 1024)
    up = client(READER).create_multipart_upload(Bucket="photos", Key="v2/mp")
    e1 = v2.upload_part(Bucket="photos", Key="v2/mp", PartNumber=1,
                        UploadId=up["UploadId"], Body=part)["ETag"]
    e2 = v2r.upload_part(Bucket="photos", Key="v2/mp", PartNumber=2,
                         UploadId=up["UploadId"], Body=b"end")["ETag"]
    v2.complete_multipart_upload(
        Bucket="photos", Key="v2/mp", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                   {"PartNumber": 2, "ETag": e2}]})
    check(v2r.get_object(Bucket="photos", Key="v2/mp")["Body"].read() ==
          part + b"end", "SigV2: a multipart upload through both gateways")
    # (ListObjectsV2 too: botocore signs its "?list-type=2")
    keys = [o["Key"] for o in v2.list_objects(
        Bucket="photos", Prefix="v2/")["Contents"]]
    check(keys == ["v2/a", "v2/b", "v2/mp"], "SigV2: a listing", str(keys))
    url = v2.generate_presigned_url(
        "get_object", Params={"Bucket": "photos", "Key": "v2/a"},
        ExpiresIn=60)
    check("AWSAccessKeyId=" in url and
          urllib.request.urlopen(url).read() == data,
          "SigV2: a presigned GET", url)
    for what, bad, want in (
            ("changed", url.replace("v2/a", "v2/b"), b"SignatureDoesNotMatch"),
            ("expired", None, b"expired"),
            ("a month ahead", None, b"a week")):
        if bad is None:
            t = int(time.time()) + (-10 if what == "expired" else 30 * 86400)
            sig = base64.b64encode(hmac_sha1(
                SK, f"GET\n\n\n{t}\n/photos/v2/a")).decode()
            bad = (f"http://127.0.0.1:{OWNER}/photos/v2/a?AWSAccessKeyId="
                   f"{AK}&Expires={t}&Signature="
                   + urllib.parse.quote(sig, safe=""))
        try:
            urllib.request.urlopen(bad)
            fail(f"a SigV2 URL {what}: accepted")
        except urllib.error.HTTPError as e:
            check(e.code == 403 and want in e.read(),
                  f"a SigV2 URL {what}: 403")
    expect_error("SigV2 with a wrong secret: SignatureDoesNotMatch",
                 ("SignatureDoesNotMatch", 403),
                 client_as(OWNER, "s3", sk=SK[:-1] + "?").list_buckets)
    # a date an hour old, signed as it is
    d = email.utils.formatdate(time.time() - 3600, usegmt=True)
    sig = base64.b64encode(hmac_sha1(SK, f"GET\n\n\n{d}\n/photos/v2/a"))
    st, body = plain_req(OWNER, "GET", "/photos/v2/a", b"",
                         {"Date": d, "Authorization":
                          f"AWS {AK}:{sig.decode()}"})
    check(st == 403 and b"RequestTimeTooSkewed" in body,
          "SigV2 with a date an hour old: RequestTimeTooSkewed",
          f"{st} {body[:200]}")
    # virtual-host style: the bucket in Host, SigV4 and SigV2
    vh, vhr = client_as(OWNER, style="virtual"), client_as(READER, "s3",
                                                           "virtual")
    vh.create_bucket(Bucket="vhost")
    vhr.put_object(Bucket="vhost", Key="k/one", Body=data)
    vh.put_object(Bucket="vhost", Key="k/two", Body=b"two")
    keys = [o["Key"] for o in vhr.list_objects(Bucket="vhost")["Contents"]]
    check(keys == ["k/one", "k/two"] and
          vh.get_object(Bucket="vhost", Key="k/one")["Body"].read() == data,
          "virtual-host style: a bucket made, written through both gateways "
          "(SigV4 and SigV2), listed and read", str(keys))
    check(client_as(READER).get_object(Bucket="vhost", Key="k/two")
          ["Body"].read() == b"two", "the same objects path-style")
    for n in range(20):	# as many signatures
        url = client_as(OWNER, "s3", "virtual").generate_presigned_url(
            "get_object", Params={"Bucket": "vhost", "Key": "k/one"},
            ExpiresIn=60 + n)
        try:
            got = urllib.request.urlopen(url).read()
        except urllib.error.HTTPError as e:
            fail(f"virtual-host style: a SigV2 presigned GET {url}: "
                 f"{e.code} {e.read()}")
        check(f"//vhost.{DOMAIN}:" in url and got == data,
              "virtual-host style: a SigV2 presigned GET", url)
    for k in ("k/one", "k/two"):
        vhr.delete_object(Bucket="vhost", Key=k)
    vh.delete_bucket(Bucket="vhost")
    check("vhost" not in [b["Name"] for b in
                          vh.list_buckets()["Buckets"]],
          "virtual-host style: the bucket deleted")
    # SigV2's query parameters mean nothing to a SigV4 request: refused
    st, code, _ = raw_req(OWNER, "GET", "/photos/v2/a?Expires=1", b"", {})
    check((st, code) == (501, "NotImplemented"), "Expires in a SigV4 "
          "request: NotImplemented", f"{st} {code}")
    # a write relayed by a gateway with another --s3-domain is refused
    st, body = plain_req(OWNER, "PUT", "/photos/x", b"x",
                         {"X-Kelpie-S3-Domain": "other.test"})
    check(st == 503 and b"--s3-domain" in body,
          "a request parsed under another --s3-domain: 503", f"{st} {body}")
    for k in ("v2/a", "v2/b", "v2/mp"):
        v2.delete_object(Bucket="photos", Key=k)


def plain_req(port, method, path, body, hdrs):
    """a request with exactly @hdrs: (status, body)"""
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=15)
    c.request(method, path, body, hdrs)
    r = c.getresponse()
    return r.status, r.read()


def hmac_sha1(secret, s):
    return hmac.new(secret.encode(), s.encode(), hashlib.sha1).digest()


def step_cleanup():
    s3 = client(OWNER)
    for k in ("a/small.txt", "big.bin", "atom", "mp/whole"):
        s3.delete_object(Bucket="photos", Key=k)
    s3.delete_bucket(Bucket="photos")
    names = [b["Name"] for b in client(READER).list_buckets()["Buckets"]]
    check(names == [], "DeleteBucket: the bucket is gone for every gateway")
    s3.create_bucket(Bucket="photos")
    r = s3.list_objects_v2(Bucket="photos")
    check(r["KeyCount"] == 0, "a bucket made again with the name is empty")


def step_sealed():
    """a bucket and an object through both gateways, signed with a secret
    the registry keeps sealed (ARGS[0]: "put" writes them first)"""
    s3, rd = client(OWNER), client(READER)
    if ARGS and ARGS[0] == "put":
        s3.create_bucket(Bucket="sealed")
        s3.put_object(Bucket="sealed", Key="k", Body=b"under seal")
    for name, c in (("owner", s3), ("reader", rd)):
        got = c.get_object(Bucket="sealed", Key="k")["Body"].read()
        check(got == b"under seal", f"signed with a sealed secret via the "
              f"{name}: the object reads back")


def step_unopened():
    """the secret does not open with this cluster key: the key is unknown"""
    for port in (OWNER, READER):
        expect_error("a secret sealed with another cluster key: "
                     "InvalidAccessKeyId", ("InvalidAccessKeyId", 403),
                     client(port).list_buckets)


# ---- test 200: data volumes of 8 MiB (KELPIE_S3_VOLUME_SIZE), so that
# objects and uploads cross from one to the next

VOL = 8 << 20
VOL_OBJS = {"small": 3000, "a": 20 * 1024 * 1024 + 7,
            "m": 13 * 1024 * 1024 + 1, "b": 12 * 1024 * 1024 + 3}
# "b" is written by vols-more; the steps after it are given "b"
VOL_KEYS = ["small", "a", "m"] + ARGS[:1]
VOL_PARTS = (5 << 20, 5 << 20, (3 << 20) + 1)
VOL_BUCKETS = ("vols", "vcoded")


def vol_data(bucket, key, size):
    """the bytes of @key in @bucket: the same for every step"""
    return random.Random(f"{bucket}/{key}").randbytes(size)


def step_vols_put():
    """a plain and a 2:1 bucket: an object of 20 MiB through the gateway
    that relays, and a multipart one whose parts go through both"""
    client(OWNER).create_bucket(Bucket="vols")
    with_redundancy(client(OWNER), "2:1").create_bucket(Bucket="vcoded")
    for b in VOL_BUCKETS:
        client(OWNER).put_object(Bucket=b, Key="small",
                                 Body=vol_data(b, "small", 3000))
        client(READER).put_object(Bucket=b, Key="a",
                                  Body=vol_data(b, "a", VOL_OBJS["a"]))
        data = vol_data(b, "m", VOL_OBJS["m"])
        up = client(OWNER).create_multipart_upload(Bucket=b, Key="m")
        parts, at = [], 0
        for i, n in enumerate(VOL_PARTS):
            c = client((OWNER, READER)[i % 2])
            r = c.upload_part(Bucket=b, Key="m", UploadId=up["UploadId"],
                              PartNumber=i + 1, Body=data[at:at + n])
            parts.append({"PartNumber": i + 1, "ETag": r["ETag"]})
            at += n
        client(READER).complete_multipart_upload(
            Bucket=b, Key="m", UploadId=up["UploadId"],
            MultipartUpload={"Parts": parts})
        print(f"{b}: 3000 B, 20 MiB and a 13 MiB upload in 3 parts stored")


def vols_read(bucket, keys, ports):
    for key in keys:
        want = vol_data(bucket, key, VOL_OBJS[key])
        for port in ports:
            got = client(port).get_object(Bucket=bucket, Key=key)
            check(got["Body"].read() == want,
                  f"{bucket}/{key} reads right through {port}")
            if len(want) < VOL:
                continue
            for k in range(1, len(want) // VOL + 1):
                for at in (k * VOL - 4096, k * VOL):
                    lo, hi = at - 5000, min(at + 5000, len(want) - 1)
                    got = client(port).get_object(
                        Bucket=bucket, Key=key, Range=f"bytes={lo}-{hi}")
                    check(got["Body"].read() == want[lo:hi + 1],
                          f"{bucket}/{key} bytes {lo}-{hi} read right "
                          f"through {port}")


def step_vols_read():
    """every object whole and across the volumes' ends, both gateways"""
    for b in VOL_BUCKETS:
        vols_read(b, VOL_KEYS, (OWNER, READER))


def step_vols_more():
    """the owner gone: a 12 MiB object through READER, which takes the
    bucket over, finds the volumes the owner made and makes more"""
    for b in VOL_BUCKETS:
        client(READER).put_object(Bucket=b, Key="b",
                                  Body=vol_data(b, "b", VOL_OBJS["b"]))
        vols_read(b, list(VOL_OBJS), (READER,))


def step_vols_empty():
    """every object of both buckets deleted"""
    for b in VOL_BUCKETS:
        for key in VOL_KEYS:
            client(OWNER).delete_object(Bucket=b, Key=key)
        r = client(READER).list_objects_v2(Bucket=b)
        check(r["KeyCount"] == 0, f"{b}: every object deleted")


def step_vols_drop():
    """both buckets deleted"""
    for b in VOL_BUCKETS:
        client(OWNER).delete_bucket(Bucket=b)
    names = [b["Name"] for b in client(READER).list_buckets()["Buckets"]]
    check(not set(VOL_BUCKETS) & set(names), "both buckets deleted")


def step_vols_again():
    """a bucket made again under the name: empty, and it stores"""
    client(OWNER).create_bucket(Bucket="vols")
    r = client(READER).list_objects_v2(Bucket="vols")
    check(r["KeyCount"] == 0, "vols made again is empty")
    client(OWNER).put_object(Bucket="vols", Key="a",
                             Body=vol_data("vols", "a", VOL_OBJS["a"]))
    vols_read("vols", ["a"], (OWNER, READER))


{"basic": step_basic, "sealed": step_sealed, "unopened": step_unopened, "list": step_list, "auth": step_auth,
 "multipart": step_multipart,
 "refused": step_refused, "reread": step_reread, "put-atom": step_put_atom,
 "cut-put": step_cut_put, "cleanup": step_cleanup,
 "copy-delete": step_copy_delete, "checksums": step_checksums,
 "http": step_http, "chunked": step_chunked, "trailer": step_trailer,
 "sigv2-vhost": step_sigv2_vhost, "redundancy": step_redundancy,
 "redundancy-clean": step_redundancy_clean,
 "rot-put": step_rot_put, "rot-get": step_rot_get,
 "mp-start": step_mp_start, "mp-finish": step_mp_finish,
 "mp-read": step_mp_read, "slow-put": step_slow_put, "fill": step_fill,
 "hold-get": step_hold_get, "empty": step_empty, "refill": step_refill,
 "mp-reclaim": step_mp_reclaim, "slow-commit": step_slow_commit,
 "kill-put": step_kill_put, "kill-commit": step_kill_commit,
 "kill-after": step_kill_after,
 "fo-setup": step_fo_setup,
 "fo-member": step_fo_member, "fo-owner-writes": step_fo_owner_writes,
 "fo-takeover": step_fo_takeover,
 "fo-after": step_fo_after, "fo-race": step_fo_race,
 "vols-put": step_vols_put, "vols-read": step_vols_read,
 "vols-more": step_vols_more, "vols-empty": step_vols_empty,
 "vols-drop": step_vols_drop, "vols-again": step_vols_again}[STEP]()
