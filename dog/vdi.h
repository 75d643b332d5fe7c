// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi: declarations shared by the files implementing the vdi
 * subcommands (vdi.c, vdi_snap.c, vdi_object.c, vdi_attr.c, vdi_lock.c,
 * vdi_check.c, vdi_copy.c, backup.c).
 */
#ifndef DOG_VDI_H
#define DOG_VDI_H

#include "dog.h"

/* the vdi option letters (dog.md §2), shared by every vdi subcommand */
struct vdi_opts {
	bool prealloc;
	bool no_share;
	bool writeback;
	bool hyper;
	bool reduce;
	bool index_set;
	uint64_t index;
	uint32_t snapid;
	char tag[SD_MAX_VDI_TAG_LEN];
	uint8_t copies;
	uint8_t copy_policy;
	uint8_t shift;		/* 0: not given */
	bool oid_set;
	uint64_t oid;
	uint32_t nr_batch;
	uint32_t interval;
	uint32_t max_reclaim;
	bool exclusive;		/* -x */
	bool delete;		/* -d */
	bool force;		/* -f */
	bool exist;		/* -e */
	bool from_set;		/* -F */
	bool checksummed;	/* -K: Kelpie's backup stream */
	uint32_t from_snapid;
	char from_tag[SD_MAX_VDI_TAG_LEN];
};

extern struct vdi_opts vopt;

/*
 * A VDI's inode header and, opened with its index, the index for vi_*
 * (flat or B-tree) and for flat VDIs the array of it (@index, kept in
 * step by vi_set).  An opened vdi_inode must not be copied: @vi refers
 * to its @io.
 */
struct vdi_inode {
	uint32_t vid;
	struct sd_inode_header h;
	uint32_t nr;
	uint32_t *index;
	struct vdi_index *vi;
	struct dog_index_io io;
};

struct new_vdi {
	const char *name;
	uint64_t size;
	uint32_t base;
	uint32_t snapid;
	uint8_t copies;
	uint8_t copy_policy;
	uint8_t store_policy;
	uint8_t shift;
};

void free_inode(struct vdi_inode *in);
int check_name(const char *name);
/* a name under .kelpie/ (said why): EXIT_FAILURE, else 0 */
int reserved_name(const char *name, const char *what);
int open_vdi(const char *name, uint32_t snapid, const char *tag,
	     struct vdi_inode *in, bool with_index);
int open_vdi_vid(uint32_t vid, struct vdi_inode *in, bool with_index);
int reject_hyper(const struct vdi_inode *in, const char *what);
int new_vdi(const struct new_vdi *nv, uint32_t *vid);
int clear_index(struct vdi_inode *in);
int del_vdi(const char *name, uint32_t snapid, const char *tag);
int delete_vdi_inode(struct vdi_inode *in, const char *name, uint32_t snapid,
		     const char *tag);
int data_entry(const struct vdi_inode *in, uint32_t idx, uint32_t *owner);
int write_chunk(struct vdi_inode *in, uint32_t idx, const uint8_t *buf,
		uint32_t len, uint32_t ooff);
ssize_t read_full(int fd, uint8_t *buf, size_t len);
char vdi_flag(const struct sd_inode_header *h);
void inode_name(const struct sd_inode_header *h, char *name);
void inode_tag(const struct sd_inode_header *h, char *tag);

/* subcommands living outside vdi.c */
int vdi_rollback(int argc, char **argv);
int vdi_tree(int argc, char **argv);
int vdi_graph(int argc, char **argv);
int vdi_track(int argc, char **argv);
int object_map(int argc, char **argv);
int object_dump_inode(int argc, char **argv);
int vdi_setattr(int argc, char **argv);
int vdi_getattr(int argc, char **argv);
int lock_list(int argc, char **argv);

/* a growing list of object ids (vdi_check.c) */
struct oid_list {
	uint64_t *oids;
	size_t nr, cap;
};
void oid_list_add(struct oid_list *l, uint64_t oid);
/*
 * The objects of VDI @in appended to @l: its inode, a hyper volume's
 * leaves, its data objects (its own and its ancestors'); 0, or -1 if
 * the index could not be read
 */
int vdi_oids(struct vdi_inode *in, struct oid_list *l);
/*
 * Does a client hold VDI @vid (its lock, or a shared lock's first
 * participant)?  1 (the holder's node, ADDR:PORT, in @who), 0, or -1
 * when the states cannot be read (printed)
 */
int vdi_holder(uint32_t vid, char *who, size_t len);
/*
 * What would destroy a VDI's data is refused while a client holds it:
 * true (after printing why) if @what ("delete", ...) of @name must not
 * be done
 */
bool refuse_in_use(uint32_t vid, const char *name, const char *what);
/*
 * The same for the whole cluster (format, snapshot load): how many VDIs
 * clients hold (each printed), -1 when that cannot be told (printed)
 */
int refuse_any_in_use(const char *what);
int lock_unlock(int argc, char **argv);
int vdi_check(int argc, char **argv);
int vdi_backup(int argc, char **argv);
int vdi_restore(int argc, char **argv);
int vdi_alter_copy(int argc, char **argv);

/* consistency check of one VDI (vdi_check.c), also used by cluster check */
int check_vdi(const char *name, struct vdi_inode *in, bool exist_only);

#endif
