/* SPDX-License-Identifier: GPL-2.0-or-later */
/* S3_REGISTRY (ops/s3reg.c): object storage's users and buckets. */
#ifndef SHEEP_OPS_S3REG_H
#define SHEEP_OPS_S3REG_H

#include <stdint.h>
#include "core/request.h"

/* what users' secrets are sealed for (core/seal.h), with a cluster key */
#define S3_SECRET_SEAL	"s3 secret"

/* the originator's work part, on the cluster worker */
int s3reg_work(struct request *req);
/* every node's main part, in total order */
int s3reg_main(const struct sd_req *req, struct sd_rsp *rsp, void *data,
	       const struct cluster_ctx *ctx);
/* changes applied so far on this node: gateways read the registry again
 * when it moves (any thread) */
uint64_t s3reg_generation(void);

#endif
