// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * S3's body checksums (s3sum.h).  CRC32 and CRC32C come from ISA-L, the
 * SHAs from libcrypto; ISA-L of Debian 12 has no CRC-64/NVME (the
 * reflected polynomial 0x9a6c9329ac4bc9b5, all ones in and out), so it
 * is a table here.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <isa-l/crc.h>
#include <openssl/evp.h>
#include "s3sum.h"

static const char *const names[S3_SUM_NR] = {
	[S3_SUM_CRC32] = "crc32", [S3_SUM_CRC32C] = "crc32c",
	[S3_SUM_CRC64NVME] = "crc64nvme", [S3_SUM_SHA1] = "sha1",
	[S3_SUM_SHA256] = "sha256",
};

enum s3_sum_algo s3_sum_by_name(const char *name, size_t len)
{
	for (int a = 1; a < S3_SUM_NR; a++)
		if (strlen(names[a]) == len && !strncasecmp(name, names[a], len))
			return (enum s3_sum_algo)a;
	return S3_SUM_NONE;
}

const char *s3_sum_name(enum s3_sum_algo a)
{
	return a > S3_SUM_NONE && a < S3_SUM_NR ? names[a] : "none";
}

#define CRC64NVME_POLY	UINT64_C(0x9a6c9329ac4bc9b5)

static uint64_t crc64_table[256];
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;

static void crc64_table_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint64_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC64NVME_POLY : c >> 1;
		crc64_table[i] = c;
	}
}

uint64_t s3_crc64nvme(uint64_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc64_once, crc64_table_init);
	crc = ~crc;
	while (len--)
		crc = crc64_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

void s3_sum_init(struct s3_sum *s, enum s3_sum_algo a)
{
	memset(s, 0, sizeof(*s));
	s->algo = a;
	if (a == S3_SUM_SHA1 || a == S3_SUM_SHA256) {
		s->md = EVP_MD_CTX_new();
		if (!s->md || !EVP_DigestInit_ex(s->md, a == S3_SUM_SHA1 ?
						 EVP_sha1() : EVP_sha256(),
						 NULL))
			abort();
	}
}

void s3_sum_update(struct s3_sum *s, const void *buf, size_t len)
{
	switch (s->algo) {
	case S3_SUM_CRC32:
		s->crc32 = crc32_gzip_refl(s->crc32, buf, len);
		break;
	case S3_SUM_CRC32C:
		/* ISA-L's iSCSI CRC takes and gives the register as is */
		s->crc32 = ~crc32_iscsi((unsigned char *)buf, (int)len,
					~s->crc32);
		break;
	case S3_SUM_CRC64NVME:
		s->crc64 = s3_crc64nvme(s->crc64, buf, len);
		break;
	case S3_SUM_SHA1:
	case S3_SUM_SHA256:
		EVP_DigestUpdate(s->md, buf, len);
		break;
	default:
		break;
	}
}

void s3_sum_free(struct s3_sum *s)
{
	if (s->md)
		EVP_MD_CTX_free(s->md);
	s->md = NULL;
}

/* bytes of a value of @a */
static int sum_len(enum s3_sum_algo a)
{
	switch (a) {
	case S3_SUM_CRC32:
	case S3_SUM_CRC32C:
		return 4;
	case S3_SUM_CRC64NVME:
		return 8;
	case S3_SUM_SHA1:
		return 20;
	case S3_SUM_SHA256:
		return 32;
	default:
		return 0;
	}
}

int s3_sum_composite(enum s3_sum_algo a, const char *const *sums, int n,
		     char out[S3_SUM_COMPOSITE])
{
	struct s3_sum s;
	uint8_t raw[S3_SUM_B64];
	int want = sum_len(a);

	s3_sum_init(&s, a);
	for (int i = 0; i < n; i++) {
		/* base64 of want bytes: 4 characters per 3, padded */
		if (!want || strlen(sums[i]) != (size_t)(want + 2) / 3 * 4 ||
		    EVP_DecodeBlock(raw, (const unsigned char *)sums[i],
				    (int)strlen(sums[i])) < want) {
			s3_sum_free(&s);
			return -1;
		}
		s3_sum_update(&s, raw, (size_t)want);
	}
	s3_sum_final(&s, out);
	snprintf(out + strlen(out), 8, "-%d", n);
	return 0;
}

void s3_sum_final(struct s3_sum *s, char out[S3_SUM_B64])
{
	uint8_t v[S3_SUM_MAX];
	unsigned int n = 0;

	switch (s->algo) {
	case S3_SUM_CRC32:
	case S3_SUM_CRC32C:
		for (n = 0; n < 4; n++)
			v[n] = (uint8_t)(s->crc32 >> (24 - 8 * n));
		break;
	case S3_SUM_CRC64NVME:
		for (n = 0; n < 8; n++)
			v[n] = (uint8_t)(s->crc64 >> (56 - 8 * n));
		break;
	case S3_SUM_SHA1:
	case S3_SUM_SHA256:
		EVP_DigestFinal_ex(s->md, v, &n);
		break;
	default:
		break;
	}
	EVP_EncodeBlock((unsigned char *)out, v, (int)n);
	s3_sum_free(s);
}
