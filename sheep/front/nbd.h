/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NBD export (sheep --nbd).  nbd.c speaks the NBD protocol to the
 * network; nbd_vdi.c turns NBD commands into object requests on a VDI, the
 * way QEMU's sheepdog driver does (protocol.md §12).  Both run on the main
 * loop only.
 */
#ifndef SHEEP_NBD_H
#define SHEEP_NBD_H

#include <stdbool.h>
#include <stdint.h>
#include "list.h"

/* NBD command types and command flags (the NBD protocol's values) */
#define NBD_CMD_READ		0
#define NBD_CMD_WRITE		1
#define NBD_CMD_DISC		2
#define NBD_CMD_FLUSH		3
#define NBD_CMD_TRIM		4
#define NBD_CMD_WRITE_ZEROES	6

#define NBD_CMD_FLAG_FUA	(1 << 0)
#define NBD_CMD_FLAG_NO_HOLE	(1 << 1)

/* NBD error values */
#define NBD_EPERM		1
#define NBD_EIO			5
#define NBD_ENOMEM		12
#define NBD_EINVAL		22
#define NBD_ENOSPC		28
#define NBD_ESHUTDOWN		108

/* the largest READ/WRITE payload we accept (the NBD default maximum) */
#define NBD_MAX_PAYLOAD		(32U << 20)

struct nbd_export;

/* one NBD command against an open export */
struct nbd_io {
	struct nbd_export *ex;
	uint16_t type;
	uint16_t flags;
	uint64_t off;
	uint32_t len;
	void *buf;		/* WRITE payload or READ destination */
	int error;		/* NBD error value when done, 0 on success */
	bool cancelled;		/* client gone: start nothing new */
	void (*done)(struct nbd_io *io);

	/* private to nbd_vdi.c */
	uint64_t cursor;
	int nr_running;
	bool in_pump;
};

/* nbd_vdi.c */

/* name is "VDI", "VDI@TAG" or "VDI@SNAPID" (snapshots are read-only) */
struct nbd_open_args {
	const char *export_name;
	bool lock;		/* writable export: take the VDI lock */
	void (*done)(struct nbd_export *ex, uint32_t result, void *arg);
	void *arg;
};
void nbd_export_open(const struct nbd_open_args *a);
/* the client is gone; commands in flight still finish */
void nbd_export_detach(struct nbd_export *ex);
/* after every nbd_io of the export is done; releases the lock */
void nbd_export_close(struct nbd_export *ex);
uint64_t nbd_export_size(const struct nbd_export *ex);
bool nbd_export_readonly(const struct nbd_export *ex);
void nbd_io_submit(struct nbd_io *io);

/* names of the current (writable) VDIs, then done(); for NBD_OPT_LIST */
void nbd_list_vdis(void (*entry)(const char *name, void *arg),
		   void (*done)(void *arg), void *arg);

/* nbd_hyper.c: a hyper volume's index for an export (event loop) */
struct nbd_hyper;
/* every allocated entry of hyper volume @vid, then @done (NULL on failure) */
void nbd_hyper_load(uint32_t vid,
		    void (*done)(void *arg, struct nbd_hyper *h, uint32_t res),
		    void *arg);
/* the vid owning data index @idx, 0 if unallocated */
uint32_t nbd_hyper_get(const struct nbd_hyper *h, uint32_t idx);
/*
 * Map @idx to @vid in the stored tree of volume @vid (the one written to
 * now), then in memory; @done with SD_RES_*.  Changes run one at a time.
 */
void nbd_hyper_set(struct nbd_hyper *h, uint32_t idx, uint32_t vid,
		   void (*done)(void *arg, uint32_t res), void *arg);
/* with no change in flight */
void nbd_hyper_free(struct nbd_hyper *h);

/* nbd.c */
int nbd_configure(const char *spec);
int nbd_init(const char *default_addr);
size_t nbd_conn_count(void);

#endif
