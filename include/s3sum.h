/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The checksums an S3 client may send with a body (x-amz-checksum-*,
 * lib/s3sum.c): CRC32, CRC32C, CRC64NVME, SHA1, SHA256, computed as the
 * bytes pass.  Values are as S3 shows them: big-endian bytes, in base64.
 */
#ifndef KELPIE_S3SUM_H
#define KELPIE_S3SUM_H
#include <stddef.h>
#include <stdint.h>

enum s3_sum_algo {
	S3_SUM_NONE = 0,
	S3_SUM_CRC32,
	S3_SUM_CRC32C,
	S3_SUM_CRC64NVME,
	S3_SUM_SHA1,
	S3_SUM_SHA256,
	S3_SUM_NR,
};

struct s3_sum {
	enum s3_sum_algo algo;
	uint32_t crc32;
	uint64_t crc64;
	void *md;			/* SHA1, SHA256: an EVP_MD_CTX */
};

#define S3_SUM_MAX	32		/* bytes of the longest value */
#define S3_SUM_B64	45		/* its base64, with a NUL */

/* the algorithm named @name ("crc32c", any case), S3_SUM_NONE if none */
enum s3_sum_algo s3_sum_by_name(const char *name, size_t len);
/* its name as S3 writes it in headers: "crc32c" */
const char *s3_sum_name(enum s3_sum_algo a);
void s3_sum_init(struct s3_sum *s, enum s3_sum_algo a);
void s3_sum_update(struct s3_sum *s, const void *buf, size_t len);
/* the value in base64 into @out; the state is freed */
void s3_sum_final(struct s3_sum *s, char out[S3_SUM_B64]);
/* the state freed without a value */
void s3_sum_free(struct s3_sum *s);
/*
 * A multipart object's checksum as S3 makes it (COMPOSITE): @a of the
 * parts' values (base64 each) one after the other, in base64, then "-N";
 * 0, or -1 if a value is not one of @a
 */
#define S3_SUM_COMPOSITE	(S3_SUM_B64 + 8)
int s3_sum_composite(enum s3_sum_algo a, const char *const *sums, int n,
		     char out[S3_SUM_COMPOSITE]);
/* CRC-64/NVME of @len bytes, continuing @crc (0 to begin) */
uint64_t s3_crc64nvme(uint64_t crc, const void *buf, size_t len);
#endif
