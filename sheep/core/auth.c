// SPDX-License-Identifier: GPL-2.0-or-later
/* The cluster key and the HMAC challenge built on it (auth.h). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "util.h"
#include "core/auth.h"

/* what the MAC covers besides the nonce: a proof means nothing else */
static const char auth_context[] = "kelpie cluster key v1";

static uint8_t key[AUTH_MAX_KEY];
static size_t key_len;

int auth_load_key(const char *path)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "cannot read the cluster key %s: %m\n", path);
		goto fail;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		fprintf(stderr, "warning: the cluster key %s is readable by "
			"other users\n", path);
	n = read(fd, key, sizeof(key));
	if (n < AUTH_MIN_KEY || n == (ssize_t)sizeof(key)) {
		fprintf(stderr, "the cluster key %s must hold %d to %d "
			"bytes\n", path, AUTH_MIN_KEY, AUTH_MAX_KEY - 1);
		goto fail;
	}
	key_len = (size_t)n;
	close(fd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

bool auth_enabled(void)
{
	return key_len > 0;
}

void auth_nonce(uint8_t nonce[AUTH_NONCE_LEN])
{
	size_t got = 0;

	while (got < AUTH_NONCE_LEN) {
		ssize_t n = getrandom(nonce + got, AUTH_NONCE_LEN - got, 0);

		if (n > 0)
			got += (size_t)n;
	}
}

void auth_prove(const uint8_t nonce[AUTH_NONCE_LEN],
		uint8_t mac[AUTH_MAC_LEN])
{
	uint8_t msg[AUTH_NONCE_LEN + sizeof(auth_context)];
	unsigned int len = AUTH_MAC_LEN;

	memcpy(msg, nonce, AUTH_NONCE_LEN);
	memcpy(msg + AUTH_NONCE_LEN, auth_context, sizeof(auth_context));
	if (!HMAC(EVP_sha256(), key, (int)key_len, msg, sizeof(msg), mac,
		  &len))
		memset(mac, 0, AUTH_MAC_LEN);	/* proves nothing */
}

bool auth_verify(const uint8_t nonce[AUTH_NONCE_LEN],
		 const uint8_t mac[AUTH_MAC_LEN])
{
	uint8_t want[AUTH_MAC_LEN];

	auth_prove(nonce, want);
	return !CRYPTO_memcmp(want, mac, AUTH_MAC_LEN);
}

/*
 * A key of its own for @purpose: HMAC-SHA256 of "kelpie key for "
 * @purpose under the cluster key, so that no use of a derived key can
 * stand for a proof or for another use
 */
void auth_derive(const char *purpose, uint8_t out[AUTH_MAC_LEN])
{
	char msg[128];
	unsigned int len = AUTH_MAC_LEN;
	int n = snprintf(msg, sizeof(msg), "kelpie key for %s", purpose);

	sd_assert(auth_enabled() && n > 0 && n < (int)sizeof(msg));
	sd_assert(HMAC(EVP_sha256(), key, (int)key_len, (uint8_t *)msg,
		       (size_t)n, out, &len) && len == AUTH_MAC_LEN);
}
