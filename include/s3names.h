/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The names of object storage (lib/s3names.c): buckets as S3 allows
 * them, users, access keys and secrets as Kelpie makes them.  Each takes
 * a length, not a terminator: the bytes are a client's.
 */
#ifndef KELPIE_S3NAMES_H
#define KELPIE_S3NAMES_H
#include <stdbool.h>
#include <stddef.h>

/* 3 to 63 of [a-z0-9.-], a letter or digit at each end, no "..", not an
 * IPv4 address */
bool s3_valid_bucket(const char *s, size_t len);
/* 1 to 63 of [A-Za-z0-9_.@-] */
bool s3_valid_user(const char *s, size_t len);
/* 16 to 31 of [A-Z0-9] */
bool s3_valid_access(const char *s, size_t len);
/* 20 to 63 of [A-Za-z0-9+/] */
bool s3_valid_secret(const char *s, size_t len);
/* a NUL within @size bytes, and what precedes it valid by @fn */
bool s3_valid_field(const char *field, size_t size,
		    bool (*fn)(const char *s, size_t len));
#endif
