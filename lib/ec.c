// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reed-Solomon coding of cluster.md §8.3 on top of libisal: the matrix is
 * built here from the spec (so strips match its test vectors), libisal
 * does the field arithmetic and the bulk multiply.
 */
#include <stdbool.h>
#include <string.h>
#include <isa-l/erasure_code.h>
#include "ec.h"
#include "sheepdog_proto.h"

/* alpha^e for alpha = 2 in GF(2^8) mod 0x11D */
static uint8_t gf_pow2(unsigned int e)
{
	uint8_t v = 1;

	for (e %= 255; e; e--)
		v = gf_mul(v, 2);
	return v;
}

static bool valid_shape(int d, int p)
{
	return (d == 2 || d == 4 || d == 8 || d == 16) &&
	       p >= 1 && p <= EC_MAX_PARITY;
}

/*
 * M is (d + p) x d: row 0 = (1, 0, ..., 0), row r >= 1, column c =
 * alpha^((r - 1) c).  With T its top d x d part and B the rest, the code
 * is E = [I ; B T^-1].
 */
static int build_matrix(struct ec_code *c)
{
	uint8_t t[EC_MAX_DATA * EC_MAX_DATA], tinv[EC_MAX_DATA * EC_MAX_DATA];
	uint8_t b[EC_MAX_PARITY * EC_MAX_DATA];
	int d = c->d, p = c->p;

	for (int r = 0; r < d + p; r++) {
		for (int col = 0; col < d; col++) {
			uint8_t v = r == 0 ? (col == 0) :
				    gf_pow2((unsigned int)((r - 1) * col));

			if (r < d)
				t[r * d + col] = v;
			else
				b[(r - d) * d + col] = v;
		}
	}
	if (gf_invert_matrix(t, tinv, d))
		return -1;
	memset(c->matrix, 0, sizeof(c->matrix));
	for (int i = 0; i < d; i++)
		c->matrix[i * d + i] = 1;
	for (int k = 0; k < p; k++) {
		for (int col = 0; col < d; col++) {
			uint8_t s = 0;

			for (int j = 0; j < d; j++)
				s ^= gf_mul(b[k * d + j], tinv[j * d + col]);
			c->matrix[(d + k) * d + col] = s;
		}
	}
	return 0;
}

int ec_init(struct ec_code *c, int d, int p)
{
	if (!valid_shape(d, p))
		return -1;
	memset(c, 0, sizeof(*c));
	c->d = d;
	c->p = p;
	c->strip = EC_STRIPE_SIZE / d;
	if (build_matrix(c))
		return -1;
	ec_init_tables(d, p, c->matrix + d * d, c->tables);
	return 0;
}

/* a decimal of 1 to 2 digits into *@v: 0, or -1 */
static int small_uint(const char *s, size_t n, unsigned int *v)
{
	if (!n || n > 2)
		return -1;
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (unsigned int)(s[i] - '0');
	}
	return 0;
}

int ec_parse_redundancy(const char *s, uint8_t *copies, uint8_t *policy)
{
	const char *colon = strchr(s, ':');
	unsigned int d, p;

	if (!colon) {
		if (small_uint(s, strlen(s), &d) || !d || d > SD_MAX_COPIES)
			return -1;
		*copies = (uint8_t)d;
		*policy = 0;
		return 0;
	}
	if (small_uint(s, (size_t)(colon - s), &d) ||
	    small_uint(colon + 1, strlen(colon + 1), &p) ||
	    (d != 2 && d != 4 && d != 8 && d != 16) || !p || p > EC_MAX_PARITY)
		return -1;
	*policy = (uint8_t)(((d / 2) << 4) | p);
	*copies = (uint8_t)(d + p);
	return 0;
}

int ec_init_policy(struct ec_code *c, uint8_t policy)
{
	if (!policy)
		return -1;
	return ec_init(c, ec_policy_data(policy), ec_policy_parity(policy));
}

void ec_encode(const struct ec_code *c, size_t len, uint8_t *const *data,
	       uint8_t *const *parity)
{
	ec_encode_data((int)len, c->d, c->p, (unsigned char *)c->tables,
		       (unsigned char **)data, (unsigned char **)parity);
}

static bool valid_choice(const struct ec_code *c, const int *idx)
{
	uint32_t seen = 0;

	for (int i = 0; i < c->d; i++) {
		if (idx[i] < 0 || idx[i] >= c->d + c->p ||
		    (seen & (UINT32_C(1) << idx[i])))
			return false;
		seen |= UINT32_C(1) << idx[i];
	}
	return true;
}

int ec_decode(const struct ec_code *c, size_t len, const int *idx,
	      uint8_t *const *in, uint8_t *const *data)
{
	uint8_t sub[EC_MAX_DATA * EC_MAX_DATA], inv[EC_MAX_DATA * EC_MAX_DATA];
	uint8_t rows[EC_MAX_DATA * EC_MAX_DATA];
	uint8_t tables[32 * EC_MAX_DATA * EC_MAX_DATA];
	uint8_t *out[EC_MAX_DATA];
	int d = c->d, nr_out = 0;

	if (!valid_choice(c, idx))
		return -1;
	for (int i = 0; i < d; i++)
		memcpy(sub + i * d, c->matrix + idx[i] * d, (size_t)d);
	if (gf_invert_matrix(sub, inv, d))
		return -1;
	/* only the data strips not among the inputs are computed */
	for (int j = 0; j < d; j++) {
		int have = -1;

		for (int i = 0; i < d; i++)
			if (idx[i] == j)
				have = i;
		if (have >= 0) {
			if (data[j] != in[have])
				memcpy(data[j], in[have], len);
			continue;
		}
		memcpy(rows + nr_out * d, inv + j * d, (size_t)d);
		out[nr_out++] = data[j];
	}
	if (!nr_out)
		return 0;
	ec_init_tables(d, nr_out, rows, tables);
	ec_encode_data((int)len, d, nr_out, tables, (unsigned char **)in, out);
	return 0;
}

void ec_split(const struct ec_code *c, const uint8_t *obj,
	      size_t nr_stripes, uint8_t *const *data)
{
	size_t strip = (size_t)c->strip;

	for (size_t s = 0; s < nr_stripes; s++)
		for (int j = 0; j < c->d; j++)
			memcpy(data[j] + s * strip,
			       obj + s * EC_STRIPE_SIZE + (size_t)j * strip,
			       strip);
}

void ec_join(const struct ec_code *c, uint8_t *const *data,
	     size_t nr_stripes, uint8_t *obj)
{
	size_t strip = (size_t)c->strip;

	for (size_t s = 0; s < nr_stripes; s++)
		for (int j = 0; j < c->d; j++)
			memcpy(obj + s * EC_STRIPE_SIZE + (size_t)j * strip,
			       data[j] + s * strip, strip);
}
