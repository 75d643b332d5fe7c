// SPDX-License-Identifier: GPL-2.0-or-later
/* Secrets sealed at rest with the cluster key (seal.h). */
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include "util.h"
#include "core/auth.h"
#include "core/seal.h"

#define SEAL_MAGIC	"~1"

bool seal_is_sealed(const char *text, size_t len)
{
	return len >= 2 && !memcmp(text, SEAL_MAGIC, 2);
}

static void to_hex(const uint8_t *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool from_hex(const char *s, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/*
 * One AES-256-GCM pass over @in into @out (@len bytes) under @purpose's
 * key with @nonce and @aad; sealing writes @tag, opening checks it.
 * false on any failure (opening: the tag did not match).
 */
static bool gcm(bool enc, const char *purpose, const char *aad,
		const uint8_t nonce[SEAL_NONCE_LEN], const uint8_t *in,
		size_t len, uint8_t *out, uint8_t tag[SEAL_TAG_LEN])
{
	uint8_t key[AUTH_MAC_LEN];
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int n, ok;

	auth_derive(purpose, key);
	ok = ctx && EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL,
				      NULL, enc) == 1 &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, SEAL_NONCE_LEN,
				 NULL) == 1 &&
	     EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, enc) == 1 &&
	     EVP_CipherUpdate(ctx, NULL, &n, (const uint8_t *)aad,
			      (int)strlen(aad)) == 1 &&
	     EVP_CipherUpdate(ctx, out, &n, in, (int)len) == 1 &&
	     (enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG,
					 SEAL_TAG_LEN, tag) == 1) &&
	     EVP_CipherFinal_ex(ctx, out + n, &n) == 1 &&
	     (!enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG,
					  SEAL_TAG_LEN, tag) == 1);
	EVP_CIPHER_CTX_free(ctx);
	OPENSSL_cleanse(key, sizeof(key));
	return ok;
}

int seal_text(const char *purpose, const char *aad, const char *plain,
	      size_t len, char *out, size_t size)
{
	uint8_t nonce[SEAL_NONCE_LEN], ct[SEAL_MAX_PLAIN], tag[SEAL_TAG_LEN];
	char *p = out + 2;

	sd_assert(auth_enabled());
	if (len > SEAL_MAX_PLAIN || size < SEAL_TEXT_LEN(len) + 1 ||
	    getrandom(nonce, sizeof(nonce), 0) != sizeof(nonce) ||
	    !gcm(true, purpose, aad, nonce, (const uint8_t *)plain, len, ct,
		 tag))
		return -1;
	memcpy(out, SEAL_MAGIC, 2);
	to_hex(nonce, SEAL_NONCE_LEN, p);
	p += 2 * SEAL_NONCE_LEN;
	to_hex(ct, len, p);
	p += 2 * len;
	to_hex(tag, SEAL_TAG_LEN, p);
	p += 2 * SEAL_TAG_LEN;
	*p = 0;
	return 0;
}

int seal_open(const char *purpose, const char *aad, const char *text,
	      size_t tlen, char *out, size_t size)
{
	uint8_t nonce[SEAL_NONCE_LEN], ct[SEAL_MAX_PLAIN], tag[SEAL_TAG_LEN];
	uint8_t pt[SEAL_MAX_PLAIN];
	size_t len;

	if (!auth_enabled() || !seal_is_sealed(text, tlen) ||
	    tlen < SEAL_TEXT_LEN(0) || (tlen - SEAL_TEXT_LEN(0)) % 2)
		return -1;
	len = (tlen - SEAL_TEXT_LEN(0)) / 2;
	if (len > SEAL_MAX_PLAIN || len >= size)
		return -1;
	text += 2;
	if (!from_hex(text, SEAL_NONCE_LEN, nonce) ||
	    !from_hex(text + 2 * SEAL_NONCE_LEN, len, ct) ||
	    !from_hex(text + 2 * (SEAL_NONCE_LEN + len), SEAL_TAG_LEN, tag) ||
	    !gcm(false, purpose, aad, nonce, ct, len, pt, tag))
		return -1;
	memcpy(out, pt, len);
	out[len] = 0;
	OPENSSL_cleanse(pt, sizeof(pt));
	return (int)len;
}
