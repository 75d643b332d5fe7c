// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog: the administration CLI (dog.md).  Shared declarations of the
 * command dispatcher, the connection helpers and the VDI helpers.
 */
#ifndef DOG_H
#define DOG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "hash.h"
#include "internal_proto.h"
#include "sheepdog_proto.h"

/* exit codes (dog.md §1.2); EXIT_SUCCESS and EXIT_FAILURE from stdlib */
#define EXIT_SYSFAIL		2
#define EXIT_EXISTS		3
#define EXIT_FULL		4
#define EXIT_MISSING		5
#define EXIT_USAGE		64

/* subcommand flags */
#define CMD_NEED_NODELIST	(1U << 0)

#define DOG_RCV_TIMEOUT		30
#define NODE_LIST_BUF_SIZE	(SD_MAX_NODES * sizeof(struct sd_node))
#define VDI_BITMAP_SIZE		(SD_NR_VDIS / 8)
#define NODE_STR_LEN		(INET6_ADDRSTRLEN + 8)

struct sd_option {
	int ch;
	const char *name;
	bool has_arg;
	const char *arg;	/* argument name in the usage line */
	const char *desc;
};

struct subcommand {
	const char *name;
	const char *arg;	/* positional arguments in the usage line */
	const char *opts;	/* accepted option letters */
	const char *desc;
	const struct subcommand *sub;	/* sub-subcommands, NULL ended */
	unsigned int flags;
	int min_args;		/* positional arguments required */
	/* @argv holds only the positional arguments */
	int (*fn)(int argc, char **argv);
};

struct command {
	const char *name;
	const struct subcommand *sub;
	const struct sd_option *options;
	/* handle one command option; returns 0 or an exit code */
	int (*parser)(int ch, const char *arg);
};

extern struct command vdi_command;
extern struct command node_command;
extern struct command cluster_command;
/* scrub.c: dog cluster scrub start|stop|status */
extern const struct subcommand scrub_cmds[];
/* cluster_snapshot.c: dog cluster snapshot save|list|load|show */
extern const struct subcommand cluster_snapshot_cmds[];
/* node.c: STAT_RECOVERY of node @nid (NULL: dog's sheep); 0 or -1 */
int stat_recovery(const struct node_id *nid, struct recovery_state *rs);
/* node_stop.c: dog node ok-to-stop */
int node_ok_to_stop(int argc, char **argv);
/* cluster.c: does the cluster hold any VDI (unknown: no); -f given */
bool cluster_has_vdis(void);
bool cluster_forced(void);
extern struct command benchmark_command;
extern struct command s3_command;

/* global options and cluster view */
extern char sdhost[];
extern int sdport;
extern bool raw_output;
extern bool verbose;
extern uint32_t sd_epoch;
extern struct sd_node *sd_nodes;
extern int sd_nodes_nr;
extern uint16_t sd_cluster_flags;

/* connection and requests (common.c) */
int dog_exec(struct sd_req *req, void *data, uint32_t buf_len,
	     struct sd_rsp *rsp);
int dog_exec_alloc(struct sd_req *req, uint32_t max_len, void **data,
		   struct sd_rsp *rsp);
int dog_exec_node(const struct node_id *nid, struct sd_req *req, void *data,
		  uint32_t buf_len, struct sd_rsp *rsp);
int dog_light_req(struct sd_req *req);
int dog_cluster_info(const struct node_id *nid, struct cluster_info_hdr *c,
		     uint32_t *result);
void dog_close(void);
int update_node_list(void);
const struct vnode_ring *dog_ring(void);
void dog_ring_free(void);
int nr_storage_zones(void);
/* a code given with -c for fewer zones than it has strips: says so, true */
bool ec_refused(int copies, uint8_t policy);

/* the epoch history (STAT_CLUSTER), newest first */
struct epoch_rec {
	struct epoch_log_hdr h;
	struct sd_node *nodes;	/* h.nr_nodes entries */
};

int fetch_epoch_log(struct epoch_rec **out, uint32_t *result);
void free_epoch_log(struct epoch_rec *recs, int n);

/* objects and VDIs (common.c) */
int dog_read_object(uint64_t oid, void *buf, uint32_t len, uint32_t off,
		    uint8_t copies, uint8_t policy);
int dog_write_object(uint64_t oid, uint64_t cow_oid, const void *buf,
		     uint32_t len, uint32_t off, uint16_t flags, uint8_t copies,
		     uint8_t policy, bool create);
int find_vdi(const char *name, uint32_t snapid, const char *tag,
	     uint32_t *vid);
int lookup_vdi(const char *name, uint32_t snapid, const char *tag,
	       uint32_t *vid);
int read_inode_header(uint32_t vid, struct sd_inode_header *h);
int read_inode_index(uint32_t vid, const struct sd_inode_header *h,
		     uint32_t *index, uint32_t nr);
int set_index_entry(uint32_t vid, const struct sd_inode_header *h,
		    uint32_t idx, uint32_t value);
/* what the index of an open VDI reads and writes with (open_vdi_index) */
struct dog_index_io {
	uint32_t vid;
	uint8_t copies;
};
struct vdi_index;
struct vdi_index *open_vdi_index(struct dog_index_io *d, uint32_t vid,
				 const struct sd_inode_header *h,
				 uint32_t *flat, uint32_t nr);
uint32_t inode_nr_objs(const struct sd_inode_header *h);
uint32_t inode_obj_size(const struct sd_inode_header *h);
void fill_name_tag(uint8_t *buf, const char *name, const char *tag);

typedef void (*vdi_visit_fn)(uint32_t vid, const struct sd_inode_header *h,
			     const uint32_t *index, uint32_t nr, void *data);
int parse_vdi(vdi_visit_fn fn, bool need_index, void *data);
int parse_vdi_start(vdi_visit_fn fn, bool need_index, void *data,
		    void (*start)(void));
/* into bitmaps of vdi_bitmap_alloc(): a short reply leaves the rest zero */
uint8_t *vdi_bitmap_alloc(void);
void vdi_bitmap_free(uint8_t *map);
int read_vdi_bitmaps(uint8_t *inuse, uint8_t *deleted, uint32_t *len);

static inline bool test_bit_le(const uint8_t *map, uint32_t bit)
{
	return map[bit / 8] & (1U << (bit % 8));
}

/* command-line helpers (common.c) */
int parse_copies(const char *s, uint8_t *copies, uint8_t *policy);
char *copies_to_str(uint8_t copies, uint8_t policy, char *buf, size_t len);
int parse_snapshot(const char *s, uint32_t *snapid, char *tag);
int parse_block_shift(const char *s, uint8_t *shift);
void print_size_error(const char *s);
bool confirm(const char *caution);
int use_percent(uint64_t used, uint64_t size);
bool confirm_prompt(const char *prompt);
/* a bar on the terminal; on stderr when stdout carries data */
extern bool progress_on_stderr;
void show_progress(uint64_t done, uint64_t total);
/* the same for counts: "12 / 40 objects" */
void show_count_progress(uint64_t done, uint64_t total, const char *unit);
char *fmt_size(uint64_t size, char *buf, size_t len);
char *fmt_time(uint64_t sec, const char *fmt, char *buf, size_t len);

#endif
