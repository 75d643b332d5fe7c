/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sheepfs: a FUSE view of a Kelpie cluster.  Shared declarations of the
 * connection layer (conn.c), the VDI files (vdi.c), the cluster text files
 * (cluster.c) and the FUSE glue (sheepfs.c).
 */
#ifndef SHEEPFS_H
#define SHEEPFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "internal_proto.h"
#include "sheepdog_proto.h"

/* ---- conn.c: requests to the cluster, with fail-over ---- */

#define SFS_DEFAULT_TIMEOUT	30	/* seconds per request */

/* sfs_exec() flags */
#define SFS_RAW		(1U << 0)	/* hand back every result as is */

/* add "host[:port][,host[:port]...]"; returns 0 or -1 on a bad entry */
int conn_add_addrs(const char *list, int default_port);
int conn_nr_addrs(void);
void conn_set_timeout(int sec);
/* stop retrying (and fail in-flight requests) once @fn returns true */
void conn_set_exit_check(bool (*fn)(void));
/* can any address be connected to?  0 or -1 */
int conn_probe(void);
void conn_cleanup(void);

/*
 * Send @req to the cluster and wait for the response.  A transport error
 * or a node that is going away moves on to the next address and resends;
 * transient results (HALT, NETWORK_ERROR, ...) are retried after a pause
 * unless SFS_RAW.  Gives up at the deadline (--timeout).  Returns 0 when
 * a response arrived (result in @rsp; at most @buf_len payload bytes in
 * @data) or -1.
 */
int sfs_exec(struct sd_req *req, void *data, uint32_t buf_len,
	     struct sd_rsp *rsp, unsigned int flags);
/*
 * The same on a connection the caller then keeps in *@fd (and closes to
 * let go): a VDI lock taken with KLOCK lives as long as its connection.
 * Results come back as they are.
 */
int sfs_exec_held(struct sd_req *req, void *data, uint32_t buf_len,
		  struct sd_rsp *rsp, int *fd);

/* ---- vdi.c: VDI files ---- */

struct vdi_ent {
	char fname[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN + 2];
	char name[SD_MAX_VDI_LEN];
	char tag[SD_MAX_VDI_TAG_LEN];
	uint32_t vid;
	uint32_t snap_id;
	uint64_t size;
	uint64_t mtime;		/* seconds */
	bool snapshot;
	uint8_t store_policy;
};

struct svdi;

extern bool sfs_allow_delete;
extern bool sfs_sync_writes;

void vdi_init(void);
void vdi_cleanup(void);
/* the entry of file name @fname in vdi/; 0, -ENOENT or -EIO */
int vdi_lookup(const char *fname, struct vdi_ent *ent);
/* call @fn for every file of vdi/; 0 or -EIO */
int vdi_list(void (*fn)(const struct vdi_ent *ent, void *arg), void *arg);
/* the size of an open VDI file (true) */
bool vdi_open_size(const char *fname, uint64_t *size);

int vdi_open(const char *fname, bool write, struct svdi **out);
void vdi_close(struct svdi *v);
ssize_t vdi_read(struct svdi *v, char *buf, size_t size, off_t off);
ssize_t vdi_write(struct svdi *v, const char *buf, size_t size, off_t off);
int vdi_flush(struct svdi *v);
int vdi_truncate(const char *fname, uint64_t size);
int vdi_unlink(const char *fname);

/* ---- cluster.c: cluster/info and node/list ---- */

struct sbuf {
	char *buf;
	size_t len;
	size_t cap;
};

void sbuf_printf(struct sbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sbuf_free(struct sbuf *sb);

/* what `dog cluster info` / `dog node list` print; 0 or -EIO */
int cluster_info_text(struct sbuf *sb);
int node_list_text(struct sbuf *sb);

/* map a result code to a negative errno */
int sd_res_to_errno(uint32_t result);

#endif
