/* SPDX-License-Identifier: GPL-2.0-or-later */
/* VDI operations (vdi/vdi.c): the parts of the VDI cluster ops. */
#ifndef SHEEP_VDI_VDI_H
#define SHEEP_VDI_VDI_H

#include "core/request.h"

/* work parts, on the cluster worker */
int vdi_new_work(struct request *req);
int vdi_lookup_work(struct request *req);
int vdi_attr_work(struct request *req);
int vdi_del_work(struct request *req);
/* main parts, on every node in total order */
int vdi_notify_add(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		   const struct cluster_ctx *ctx);
/* NOTIFY_VDI_ADD: register a VDI whose inode is written by the client */
int vdi_notify_restore(const struct sd_req *req, struct sd_rsp *rsp,
		       void *data, const struct cluster_ctx *ctx);
int vdi_notify_del(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		   const struct cluster_ctx *ctx);
int vdi_lock_main(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		  const struct cluster_ctx *ctx);
int vdi_release_main(const struct sd_req *req, struct sd_rsp *rsp,
		     void *data, const struct cluster_ctx *ctx);

#endif
