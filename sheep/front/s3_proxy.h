/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A request relayed to the gateway that owns its bucket (s3_proxy.c). */
#ifndef SHEEP_FRONT_S3_PROXY_H
#define SHEEP_FRONT_S3_PROXY_H

#include "front/s3.h"

/*
 * Relay the request of @c (its head parsed, its body not read yet) to the
 * S3 endpoint @target ("ADDR:PORT") and its answer back; @c is closed
 * after.  0, or -1 if @target cannot be reached (nothing was sent to the
 * client: answer it).
 */
int s3_forward(struct s3_conn *c, const char *target);

#endif
