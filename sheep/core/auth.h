/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cluster key (sheep --cluster-key FILE): sheep prove to each other
 * that they hold it with an HMAC-SHA256 over a nonce the serving sheep
 * chose for the connection (front/client.c serves the challenge,
 * net/peer.c answers it).
 */
#ifndef SHEEP_CORE_AUTH_H
#define SHEEP_CORE_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#define AUTH_NONCE_LEN	32
#define AUTH_MAC_LEN	32
#define AUTH_MIN_KEY	16
#define AUTH_MAX_KEY	4096

/* read the key; -1 with a message on stderr when it is unusable */
int auth_load_key(const char *path);
bool auth_enabled(void);
void auth_nonce(uint8_t nonce[AUTH_NONCE_LEN]);
void auth_prove(const uint8_t nonce[AUTH_NONCE_LEN],
		uint8_t mac[AUTH_MAC_LEN]);
bool auth_verify(const uint8_t nonce[AUTH_NONCE_LEN],
		 const uint8_t mac[AUTH_MAC_LEN]);
/* a key for one @purpose, derived from the cluster key (which must be set) */
void auth_derive(const char *purpose, uint8_t out[AUTH_MAC_LEN]);

#endif
