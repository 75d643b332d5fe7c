/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small secrets sealed at rest with the cluster key (sheep --cluster-key):
 * AES-256-GCM under a key derived for one purpose, a random nonce per
 * seal, and the record's name as associated data, so that a sealed value
 * copied under another name does not open.  Sealed text is "~1" and the
 * hex of nonce, ciphertext and tag; nothing else starts with '~'.  The S3
 * registry seals users' secrets (ops/s3reg.c) and the gateways open them
 * (front/s3_reg.c).
 */
#ifndef SHEEP_CORE_SEAL_H
#define SHEEP_CORE_SEAL_H

#include <stdbool.h>
#include <stddef.h>

#define SEAL_NONCE_LEN	12
#define SEAL_TAG_LEN	16
#define SEAL_MAX_PLAIN	64
/* the text of @n bytes sealed, without its NUL */
#define SEAL_TEXT_LEN(n)	(2 + 2 * (SEAL_NONCE_LEN + (n) + SEAL_TAG_LEN))

/* @text (@len bytes) is sealed text, whether or not it opens */
bool seal_is_sealed(const char *text, size_t len);
/*
 * @plain (@len bytes, at most SEAL_MAX_PLAIN) sealed for @purpose under
 * the name @aad into @out (NUL-ended, @size bytes at least
 * SEAL_TEXT_LEN(@len) + 1).  The cluster key must be set.  0, or -1.
 */
int seal_text(const char *purpose, const char *aad, const char *plain,
	      size_t len, char *out, size_t size);
/*
 * sealed @text (@tlen bytes) opened into @out (NUL-ended): its length,
 * or -1 when there is no cluster key, the text is malformed or too long
 * for @out, or it does not open (another key, name or purpose, or
 * altered)
 */
int seal_open(const char *purpose, const char *aad, const char *text,
	      size_t tlen, char *out, size_t size);

#endif
