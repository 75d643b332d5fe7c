/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Object storage over HTTP (sheep --s3 [ADDR:]PORT, doc/object-storage.md):
 * s3.c holds the connections (a poller thread that gathers request heads,
 * a fixed pool of workers that serve them), s3_api.c the S3 requests,
 * s3_bucket.c the buckets and their objects in the cluster, s3_reg.c the
 * registry of users and buckets as this gateway knows it.
 */
#ifndef SHEEP_FRONT_S3_H
#define SHEEP_FRONT_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "http.h"

/* s3_api.c: sheep --s3, 0 or -1 for a bad spec */
int s3_configure(const char *spec);
/*
 * s3_proxy.c: --s3-domain: a Host of BUCKET.@name names the bucket (virtual-host
 * style): 0, or -1 if @name is no domain name
 */
int s3_set_domain(const char *name);
/* is --s3 given? */
bool s3_enabled(void);
/* that domain, "-" if none (relayed writes carry it to the owner) */
const char *s3_domain(void);
/* s3_api.c: --s3-grace (s3_bucket.h): 0, or -1 if it is no such number */
int s3_set_grace(const char *seconds);
bool s3_grace_given(void);
/* s3_api.c: start the endpoint if configured: 0 or -1 (said in the log) */
int s3_init(const char *default_addr);

/* ---- s3.c: the connections, and what a request's handler is given ---- */

struct s3_conn;

/* listen on @addr:@port; @serve answers each request: 0 or -1 (logged) */
int s3_conns_start(const char *addr, int port,
		   void (*serve)(struct s3_conn *c));
/* a thread of the endpoint running @fn, detached, no signals: 0 or -1 */
int s3_thread_start(void *(*fn)(void *));

/* the request being served, its head parsed */
const struct http_request *s3_request(const struct s3_conn *c);
/*
 * Up to @len bytes of the body into @buf: how many (0 at its end), -1 if
 * the client went or was too slow.  Reads no further than the body.
 */
ssize_t s3_body_read(struct s3_conn *c, void *buf, size_t len);
/* the rest of the body, read and dropped: 0, or -1 (close) */
int s3_body_drain(struct s3_conn *c);
/* @len bytes to the client: 0, or -1 (the connection is closed after) */
int s3_send(struct s3_conn *c, const void *buf, size_t len);
/* the connection is closed after this answer */
void s3_close_after(struct s3_conn *c);
/* will it be? (the answer says Connection: close) */
bool s3_closing(const struct s3_conn *c);
/* an answer's head is about to go: a 100 Continue first if one is due */
void s3_answering(struct s3_conn *c);
/*
 * For relaying the request elsewhere (s3_proxy.c): its head as received,
 * the socket, the body bytes already read with the head, and no 100
 * Continue of our own (the other end answers the client's Expect)
 */
const char *s3_head(const struct s3_conn *c, size_t *len);
int s3_fd(const struct s3_conn *c);
size_t s3_body_buffered(const struct s3_conn *c);
uint64_t s3_body_left(const struct s3_conn *c);
void s3_no_continue(struct s3_conn *c);


#endif
