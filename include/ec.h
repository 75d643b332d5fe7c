/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Erasure code of cluster.md §8: systematic Reed-Solomon over GF(2^8)
 * (polynomial 0x11D) from the Vandermonde construction, computed with
 * Debian's libisal.
 *
 * An object's bytes form 512-byte stripes; data strip j of every stripe
 * goes to target j, parity strip k to target d + k.  The functions here
 * work on "strip buffers": buffer i holds strip i of a run of stripes,
 * one after the other, which is exactly what target i stores.  The code
 * is byte-wise linear, so coding whole strip buffers codes every stripe.
 */
#ifndef KELPIE_EC_H
#define KELPIE_EC_H

#include <stddef.h>
#include <stdint.h>

#define EC_STRIPE_SIZE	512	/* SD_EC_DATA_STRIPE_SIZE */
#define EC_MAX_DATA	16
#define EC_MAX_PARITY	15
#define EC_MAX_STRIPS	(EC_MAX_DATA + EC_MAX_PARITY)

struct ec_code {
	int d, p;
	int strip;			/* bytes of a strip: 512 / d */
	/* E = [I_d ; parity rows], row-major, (d + p) x d */
	uint8_t matrix[EC_MAX_STRIPS * EC_MAX_DATA];
	/* libisal's expanded tables for the parity rows */
	uint8_t tables[32 * EC_MAX_DATA * EC_MAX_PARITY];
};

/* 0, or -1 if d is not 2, 4, 8 or 16 or p is not 1..15 */
int ec_init(struct ec_code *c, int d, int p);
/*
 * "N" (copies, 1 to 31) or "D:P" (D of 2, 4, 8 or 16, P of 1 to 15), as
 * dog's -c takes it: the copies and policy byte of objects.md §2 (0 for
 * copies), 0; or -1 if @s is neither
 */
int ec_parse_redundancy(const char *s, uint8_t *copies, uint8_t *policy);
/* from the policy byte of objects.md §2 (0 is no code: -1) */
int ec_init_policy(struct ec_code *c, uint8_t policy);

/* the parity strip buffers from the data strip buffers, each @len bytes */
void ec_encode(const struct ec_code *c, size_t len, uint8_t *const *data,
	       uint8_t *const *parity);

/*
 * The d data strip buffers from any d strip buffers: @idx lists their
 * strip indices (0..d+p-1, distinct), @in their buffers, @len bytes each.
 * Data strips among the inputs are copied.  0, or -1 for bad indices.
 */
int ec_decode(const struct ec_code *c, size_t len, const int *idx,
	      uint8_t *const *in, uint8_t *const *data);

/*
 * Object bytes <-> data strip buffers for @nr_stripes whole stripes:
 * ec_split scatters stripe s's strip j to data[j] + s * strip, ec_join
 * gathers them back.
 */
void ec_split(const struct ec_code *c, const uint8_t *obj,
	      size_t nr_stripes, uint8_t *const *data);
void ec_join(const struct ec_code *c, uint8_t *const *data,
	     size_t nr_stripes, uint8_t *obj);

#endif
