/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A cursor over a fuzz input, shared by the harnesses of tests/fuzz/.
 * Every take_*() returns zeros once the input is used up, so a harness
 * never reads past it and stays deterministic for a given input.
 */
#ifndef KELPIE_FUZZ_INPUT_H
#define KELPIE_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct fuzz_in {
	const uint8_t *p;
	size_t len;
	size_t pos;
};

static inline void fuzz_in_init(struct fuzz_in *in, const uint8_t *p,
				size_t len)
{
	in->p = p;
	in->len = len;
	in->pos = 0;
}

static inline size_t fuzz_left(const struct fuzz_in *in)
{
	return in->len - in->pos;
}

/* copy up to @n bytes into @buf, zero-filling what the input lacks */
static inline size_t take_bytes(struct fuzz_in *in, void *buf, size_t n)
{
	size_t got = n < fuzz_left(in) ? n : fuzz_left(in);

	if (got)
		memcpy(buf, in->p + in->pos, got);
	if (got < n)
		memset((uint8_t *)buf + got, 0, n - got);
	in->pos += got;
	return got;
}

/* @n bytes of the input in place, or NULL if fewer are left */
static inline const uint8_t *take_ptr(struct fuzz_in *in, size_t n)
{
	const uint8_t *p;

	if (n > fuzz_left(in))
		return NULL;
	p = in->p + in->pos;
	in->pos += n;
	return p;
}

static inline uint8_t take_u8(struct fuzz_in *in)
{
	uint8_t v;

	take_bytes(in, &v, 1);
	return v;
}

static inline uint16_t take_u16(struct fuzz_in *in)
{
	uint8_t b[2];

	take_bytes(in, b, 2);
	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t take_u32(struct fuzz_in *in)
{
	uint8_t b[4];

	take_bytes(in, b, 4);
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static inline uint64_t take_u64(struct fuzz_in *in)
{
	uint64_t lo = take_u32(in);

	return lo | (uint64_t)take_u32(in) << 32;
}

#endif
