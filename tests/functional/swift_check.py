#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Swift checks of test 194, with python3-swiftclient (and boto3).

swift_check.py STEP OWNER_PORT OTHER_PORT KEYFILE [ARGS...]

KEYFILE holds "ACCESS SECRET" of the user alice.  Each step prints one
line per check that holds and exits 1 at the first that does not.
"""
import hashlib
import http.client
import json
import random
import sys

import boto3
from botocore.config import Config
from swiftclient import client as sw
from swiftclient.exceptions import ClientException

STEP, OWNER, OTHER, KEYFILE = sys.argv[1:5]
ARGS = sys.argv[5:]
AK, SK = open(KEYFILE).read().split()


def fail(why):
    print("FAIL: " + why, file=sys.stderr)
    sys.exit(1)


def check(cond, what, why=""):
    if not cond:
        fail(f"{what}: {why}")
    print(what)


def auth(port, user="alice:alice", key=SK):
    return sw.get_auth(f"http://127.0.0.1:{port}/auth/v1.0", user, key)


def status_of(fn, *a, **kw):
    """the HTTP status of a call that must fail"""
    try:
        fn(*a, **kw)
    except ClientException as e:
        return e.http_status
    return 200


def s3(port):
    return boto3.client(
        "s3", endpoint_url=f"http://127.0.0.1:{port}",
        aws_access_key_id=AK, aws_secret_access_key=SK,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"},
                      signature_version="s3v4",
                      retries={"max_attempts": 1}))


def raw(port, method, path, token, headers=None, body=None):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=15)
    h = {"X-Auth-Token": token}
    h.update(headers or {})
    c.request(method, path, body, h)
    r = c.getresponse()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()


def step_auth():
    url, tok = auth(OWNER)
    check(url.endswith("/v1/AUTH_alice") and tok.startswith("KLP1"),
          "auth v1: a storage URL of alice's account and a token")
    url2, tok2 = auth(OTHER, user="alice")
    check(url2.endswith("/v1/AUTH_alice"), "auth as alice alone, through "
          "the other gateway")
    for user, key, what in (("alice:alice", "wrong", "a wrong key"),
                            ("nobody:nobody", SK, "an unknown user"),
                            ("alice:bob", SK, "another account's user")):
        check(status_of(auth, OWNER, user, key) == 401,
              f"auth with {what}: 401")
    path = "/v1/AUTH_alice"
    st, _, _ = raw(OWNER, "GET", path, "KLP1" + "0" * 80 + "alice")
    check(st == 401, "a forged token: 401", st)
    st, _, _ = raw(OWNER, "GET", path, tok[:-1] + "x")
    check(st == 401, "a token with its user changed: 401", st)
    st, _, _ = raw(OWNER, "GET", "/v1/AUTH_bob", tok)
    check(st == 403, "alice's token on bob's account: 403", st)


def step_objects():
    url, tok = auth(OWNER)
    ourl = url.replace(OWNER, OTHER)
    sw.put_container(url, tok, "pics")
    r = {}
    sw.put_container(url, tok, "pics", response_dict=r)
    check(r["status"] == 202, "a container made twice: 202", r["status"])
    small = b"hello, swift"
    etag = sw.put_object(url, tok, "pics", "a/small.txt", small,
                         content_type="text/x-hello",
                         headers={"X-Object-Meta-Color": "blue"})
    check(etag == hashlib.md5(small).hexdigest(), "a small object: its ETag "
          "is its MD5")
    hdrs, body = sw.get_object(ourl, tok, "pics", "a/small.txt")
    check(body == small and hdrs["content-type"] == "text/x-hello" and
          hdrs["x-object-meta-color"] == "blue",
          "read back through the other gateway with the same token: bytes, "
          "type, metadata")
    g = s3(OTHER).get_object(Bucket="pics", Key="a/small.txt")
    check(g["Body"].read() == small and g["Metadata"] == {"color": "blue"},
          "the same object through S3")
    big = random.randbytes(9 * 1024 * 1024 + 3)
    open(ARGS[0], "wb").write(big)
    sw.put_object(ourl, tok, "pics", "big.bin", big)
    _, got = sw.get_object(url, tok, "pics", "big.bin")
    check(got == big, "9 MiB written through the gateway that does not own "
          "the container (relayed), read back")
    hdrs, part = sw.get_object(url, tok, "pics", "big.bin",
                               headers={"Range": "bytes=10-19"})
    check(part == big[10:20], "a range")
    st = status_of(sw.put_object, url, tok, "pics", "bad", b"abc",
                   etag="0" * 32)
    check(st == 422, "a body whose ETag is wrong: 422", st)
    s3(OWNER).put_object(Bucket="pics", Key="a/from-s3", Body=b"s3 wrote",
                         Metadata={"who": "boto3"})
    h = sw.head_object(url, tok, "pics", "a/from-s3")
    check(h["x-object-meta-who"] == "boto3", "an object written through S3 "
          "has its metadata in Swift")
    sw.post_object(ourl, tok, "pics", "a/small.txt",
                   {"X-Object-Meta-Color": "red", "X-Object-Meta-Size": "s"})
    hdrs, body = sw.get_object(url, tok, "pics", "a/small.txt")
    check(body == small and hdrs["x-object-meta-color"] == "red" and
          hdrs["x-object-meta-size"] == "s", "POST replaces the metadata, "
          "keeps the bytes")


def step_listings():
    url, tok = auth(OTHER)
    for i in range(5):
        sw.put_object(url, tok, "pics", f"d/{i}", b"x" * i)
    _, objs = sw.get_container(url, tok, "pics")
    names = [o["name"] for o in objs]
    check(names == ["a/from-s3", "a/small.txt", "big.bin"] +
          [f"d/{i}" for i in range(5)], "a container's listing in order",
          names)
    o = [o for o in objs if o["name"] == "d/3"][0]
    check(o["bytes"] == 3 and o["hash"] == hashlib.md5(b"xxx").hexdigest()
          and "last_modified" in o, "with sizes, hashes and times")
    _, objs = sw.get_container(url, tok, "pics", delimiter="/")
    check([o.get("subdir", o.get("name")) for o in objs] ==
          ["a/", "big.bin", "d/"], "with a delimiter: subdirs")
    _, objs = sw.get_container(url, tok, "pics", prefix="d/", marker="d/1",
                               limit=2)
    check([o["name"] for o in objs] == ["d/2", "d/3"],
          "prefix, marker and limit")
    _, objs = sw.get_container(url, tok, "pics", limit=3, full_listing=True)
    check(len(objs) == 8, "a full listing in pages of 3")
    st, _, body = raw(OTHER, "GET", "/v1/AUTH_alice/pics?prefix=d/&format="
                      "plain", tok)
    check(st == 200 and body == b"".join(f"d/{i}\n".encode()
                                         for i in range(5)),
          "format=plain", body)
    st, _, _ = raw(OTHER, "GET", "/v1/AUTH_alice/pics?format=xml", tok)
    check(st == 501, "format=xml: 501", st)
    h = sw.head_container(url, tok, "pics")
    check(h["x-container-object-count"] == "8", "the container's object "
          "count", h)
    h, conts = sw.get_account(url, tok)
    check([c["name"] for c in conts] == ["pics"] and
          h["x-account-object-count"] == "8", "the account: its container "
          "and counts", h)
    # the counts are kept with each commit: an overwrite, DeleteObjects
    # and a multipart completion through S3 move them as a walk would
    sw.put_object(url, tok, "pics", "d/4", b"y" * 10)
    s3(OWNER).delete_objects(Bucket="pics", Delete={"Objects": [
        {"Key": "d/0"}, {"Key": "no/such"}]})
    c = s3(OTHER)
    up = c.create_multipart_upload(Bucket="pics", Key="mp")["UploadId"]
    e1 = c.upload_part(Bucket="pics", Key="mp", PartNumber=1, UploadId=up,
                       Body=b"p" * (5 * 1024 * 1024))["ETag"]
    e2 = c.upload_part(Bucket="pics", Key="mp", PartNumber=2, UploadId=up,
                       Body=b"q")["ETag"]
    c.complete_multipart_upload(
        Bucket="pics", Key="mp", UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                   {"PartNumber": 2, "ETag": e2}]})
    _, objs = sw.get_container(url, tok, "pics", full_listing=True)
    h = sw.head_container(url, tok, "pics")
    want = (str(len(objs)), str(sum(o["bytes"] for o in objs)))
    check((h["x-container-object-count"], h["x-container-bytes-used"]) ==
          want and want[0] == "8", "the counts after an overwrite, a "
          "DeleteObjects and a multipart upload match the listing", h)
    c.delete_object(Bucket="pics", Key="mp")
    h = sw.head_container(url, tok, "pics")
    check(h["x-container-object-count"] == "7", "and after a delete", h)


def step_refused():
    url, tok = auth(OWNER)
    st, _, _ = raw(OWNER, "PUT", "/v1/AUTH_alice/pics/copy", tok,
                   {"X-Copy-From": "pics/big.bin", "Content-Length": "0"})
    check(st == 501, "X-Copy-From: 501", st)
    st, _, _ = raw(OWNER, "PUT", "/v1/AUTH_alice/pics/x", tok,
                   {"X-Delete-After": "10", "Content-Length": "0"})
    check(st == 501, "X-Delete-After: 501", st)
    st, _, _ = raw(OWNER, "POST", "/v1/AUTH_alice/pics", tok,
                   {"X-Container-Meta-A": "b"})
    check(st == 501, "POST on a container: 501", st)
    st = status_of(sw.put_container, url, tok, "Not_A_Bucket")
    check(st == 400, "a container name that is no bucket name: 400", st)
    st = status_of(sw.delete_container, url, tok, "pics")
    check(st == 409, "deleting a container with objects: 409", st)
    st = status_of(sw.delete_object, url, tok, "pics", "nothing")
    check(st == 404, "deleting a missing object: 404", st)


def step_cleanup():
    url, tok = auth(OTHER)
    _, objs = sw.get_container(url, tok, "pics", full_listing=True)
    for o in objs:
        sw.delete_object(url, tok, "pics", o["name"])
    sw.delete_container(url, tok, "pics")
    _, conts = sw.get_account(url, tok)
    check(conts == [], "every object and the container deleted")


def step_token_of():
    """a token of user ARGS[0] (whose secret is ARGS[1]) into ARGS[2]"""
    _, tok = auth(OWNER, f"{ARGS[0]}:{ARGS[0]}", ARGS[1])
    open(ARGS[2], "w").write(tok)
    print(f"a token of {ARGS[0]}")


def step_token_dead():
    tok = open(ARGS[1]).read()
    st, _, _ = raw(OWNER, "GET", f"/v1/AUTH_{ARGS[0]}", tok)
    check(st == 401, f"{ARGS[0]}'s token once the user is deleted: 401", st)


{"auth": step_auth, "objects": step_objects, "listings": step_listings,
 "refused": step_refused, "cleanup": step_cleanup,
 "token-of": step_token_of, "token-dead": step_token_dead}[STEP]()
