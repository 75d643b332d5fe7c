// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi backup|restore (dog.md §2.15, §2.16): the differences between
 * two snapshots of a VDI as a self-checking stream, and applying such a
 * stream on top of a snapshot.
 *
 * Kelpie's backup stream, version 1.  Every integer is little-endian;
 * every CRC is CRC32C (Castagnoli, reflected polynomial 0x82F63B78, initial
 * value and final XOR 0xFFFFFFFF; "123456789" -> 0xE3069283).
 *
 *   header, 40 bytes
 *      0  8  magic "KELPBKP1"
 *      8  4  version, 1
 *     12  4  flags, 0 (a reader rejects flags it does not know)
 *     16  8  virtual size of the VDI at the "to" snapshot
 *     24  4  block_size_shift (object size 2^shift)
 *     28  4  snapshot id of the base ("from") snapshot, 0 if none
 *     32  4  snapshot id of the "to" snapshot
 *     36  4  CRC32C of bytes 0..35
 *
 *   data records, in strictly ascending index order
 *      0  4  index of the data object (< 0xFFFFFFFF)
 *      4  4  offset inside the object
 *      8  4  length, > 0, offset + length <= object size
 *     12  4  CRC32C of the data
 *     16     length bytes of data: the "to" snapshot's content there
 *
 *   end record, 16 bytes
 *      0  4  0xFFFFFFFF
 *      4  4  number of data records
 *      8  4  0
 *     12  4  CRC32C of every byte of the stream before this field
 *
 * Nothing may follow the end record.
 *
 * Sheepdog's stream (dog.md §2.15), the default of vdi backup: a header
 * of u32 version 1 and u32 magic 0x11921192, records {u32 index, u32
 * offset, u32 length, u32 0} each followed by its data, and an end record
 * with index 0xFFFFFFFF and the rest 0; no sizes, no checksums (only its
 * structure is checked; the snapshot restored on gives the object size).
 * restore reads both.
 *
 * For each block where either snapshot
 * has data, the objects of both are compared (missing ones read as zeros)
 * and the 512-byte sectors that are equal at both ends are left out; a
 * block whose objects are equal gets no record.  Without a base snapshot
 * the comparison is with zeros, so such a stream rebuilds the snapshot on
 * top of any snapshot whose content is all zeros.
 *
 * restore reads and checks the whole stream (header, every record and the
 * end record) before it changes anything; a stream that is not a regular
 * file is copied to an unlinked temporary file meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dog.h"
#include "proto.h"
#include "vindex.h"
#include "util.h"
#include "vdi.h"

#define BACKUP_MAGIC		"KELPBKP1"
#define BACKUP_VERSION		1
#define BACKUP_HDR_SIZE		40
#define BACKUP_REC_SIZE		16
#define BACKUP_END_IDX		UINT32_C(0xFFFFFFFF)
#define SECTOR			512
#define SD_BACKUP_VERSION	1
#define SD_BACKUP_MAGIC		UINT32_C(0x11921192)
#define SD_BACKUP_HDR_SIZE	8

/* ---- CRC32C ---- */

static uint32_t crc32c_table[256];

static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? UINT32_C(0x82F63B78) : 0);
		crc32c_table[i] = c;
	}
}

/* continue @crc (0 to start) over @len bytes */
static uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!crc32c_table[1])
		crc32c_init();
	crc = ~crc;
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

struct backup_hdr {
	uint32_t version;
	uint32_t flags;
	uint64_t vdi_size;
	uint32_t shift;
	uint32_t from;
	uint32_t to;
	bool sheepdog;		/* Sheepdog's stream: no sizes, no CRCs */
};

static void backup_hdr_encode(const struct backup_hdr *h, uint8_t *b)
{
	memcpy(b, BACKUP_MAGIC, 8);
	put_le32(b + 8, h->version);
	put_le32(b + 12, h->flags);
	put_le64(b + 16, h->vdi_size);
	put_le32(b + 24, h->shift);
	put_le32(b + 28, h->from);
	put_le32(b + 32, h->to);
	put_le32(b + 36, crc32c(0, b, 36));
}

/* ---- backup ---- */

struct out_stream {
	uint32_t crc;
	uint32_t nr_records;
};

static int emit(struct out_stream *o, const void *buf, size_t len)
{
	o->crc = crc32c(o->crc, buf, len);
	if (xwrite(STDOUT_FILENO, buf, len) < 0) {
		fprintf(stderr, "Failed to write the backup: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

static int emit_record(struct out_stream *o, uint32_t idx, uint32_t off,
		       const uint8_t *data, uint32_t len, bool sheepdog)
{
	uint8_t r[BACKUP_REC_SIZE];

	put_le32(r, idx);
	put_le32(r + 4, off);
	put_le32(r + 8, len);
	put_le32(r + 12, sheepdog ? 0 : crc32c(0, data, len));
	if (emit(o, r, sizeof(r)) || emit(o, data, len))
		return -1;
	o->nr_records++;
	return 0;
}

/* object @idx of @in into @buf, zeros if unallocated */
/* object @idx of @in, owned by @owner (0: unallocated, zeros) */
static int read_block(const struct vdi_inode *in, uint32_t owner,
		      uint32_t idx, uint8_t *buf, uint32_t size)
{
	if (!owner) {
		memset(buf, 0, size);
		return 0;
	}
	return dog_read_object(vid_to_data_oid(owner, idx), buf, size, 0,
			       in->h.nr_copies, in->h.copy_policy) ? -1 : 0;
}

/* the differing part of two objects, in whole sectors; false if equal */
static bool diff_range(const uint8_t *a, const uint8_t *b, uint32_t size,
		       uint32_t *off, uint32_t *len)
{
	uint32_t start = 0, end = size;

	while (start < size) {
		uint32_t n = MIN((uint32_t)SECTOR, size - start);

		if (memcmp(a + start, b + start, n))
			break;
		start += n;
	}
	if (start == size)
		return false;
	while (end > start) {
		uint32_t n = end % SECTOR ? end % SECTOR : SECTOR;

		if (memcmp(a + end - n, b + end - n, n))
			break;
		end -= n;
	}
	*off = start;
	*len = end - start;
	return true;
}

static int check_snapshot(const struct vdi_inode *in, const char *what)
{
	if (!in->h.snap_ctime) {
		fprintf(stderr, "The %s VDI is not a snapshot\n", what);
		return EXIT_FAILURE;
	}
	return 0;
}

struct backup_ctx {
	struct vdi_inode *to, *from;	/* from: NULL for a full backup */
	struct out_stream *o;
	uint8_t *a, *b;
	uint32_t size;
	bool sheepdog;
};

/* index @idx, owned by @tv in the target: a record if it changed */
static int backup_entry(uint32_t idx, uint32_t tv, void *arg)
{
	struct backup_ctx *c = arg;
	uint32_t fv = 0, off, len;

	if (c->from && c->from->vi && vi_get(c->from->vi, idx, &fv))
		return -1;
	/* the same object (or none) on both sides: nothing changed */
	if (tv == fv)
		return 0;
	if (idx == BACKUP_END_IDX) {
		fprintf(stderr, "The last object of a 16 PiB volume cannot "
			"be backed up (its index marks the stream's end)\n");
		return -1;
	}
	if (read_block(c->to, tv, idx, c->a, c->size) ||
	    read_block(c->from, fv, idx, c->b, c->size))
		return -1;
	if (diff_range(c->a, c->b, c->size, &off, &len) &&
	    emit_record(c->o, idx, off, c->a + off, len, c->sheepdog))
		return -1;
	show_progress((uint64_t)(idx + 1) * c->size,
		      (uint64_t)inode_nr_objs(&c->to->h) * c->size);
	return 0;
}

/*
 * Every index that may have changed: a flat index entry by entry (an entry
 * cleared since the base is a change too), a hyper volume's allocated
 * entries (a B-tree entry is never cleared)
 */
static int backup_entries(struct backup_ctx *c)
{
	if (c->to->h.store_policy)
		return vi_for_each(c->to->vi, backup_entry, c) ? -1 : 0;
	for (uint32_t i = 0; i < c->to->nr; i++)
		if (backup_entry(i, c->to->index[i], c))
			return -1;
	return 0;
}

int vdi_backup(int argc, char **argv)
{
	const char *name = argv[0];
	struct vdi_inode to, from = { 0 };
	struct out_stream o = { 0 };
	struct backup_hdr bh = { .version = BACKUP_VERSION };
	uint8_t hdr[BACKUP_HDR_SIZE], end[BACKUP_REC_SIZE];
	uint8_t *a = NULL, *b = NULL;
	bool sheepdog = !vopt.checksummed;
	uint32_t size;
	int ret;

	if (!vopt.snapid && !vopt.tag[0]) {
		fprintf(stderr, "Please specify the '-s' option\n");
		return EXIT_USAGE;
	}
	if (isatty(STDOUT_FILENO)) {
		fprintf(stderr, "Refusing to write a backup to a terminal\n");
		return EXIT_FAILURE;
	}
	ret = open_vdi(name, vopt.snapid, vopt.tag, &to, true);
	if (ret)
		return ret;
	ret = check_snapshot(&to, "target");
	if (ret)
		goto out;
	if (vopt.from_set) {
		ret = open_vdi(name, vopt.from_snapid, vopt.from_tag, &from,
			       true);
		if (ret)
			goto out;
		ret = check_snapshot(&from, "base");
		if (ret)
			goto out;
		if (from.h.block_size_shift != to.h.block_size_shift) {
			fprintf(stderr, "The two snapshots have different "
				"object sizes\n");
			ret = EXIT_FAILURE;
			goto out;
		}
		bh.from = from.h.snap_id;
	}
	bh.vdi_size = to.h.vdi_size;
	bh.shift = to.h.block_size_shift ? to.h.block_size_shift :
		   SD_DEFAULT_BLOCK_SIZE_SHIFT;
	bh.to = to.h.snap_id;

	ret = EXIT_FAILURE;
	if (sheepdog) {
		put_le32(hdr, SD_BACKUP_VERSION);
		put_le32(hdr + 4, SD_BACKUP_MAGIC);
		if (emit(&o, hdr, SD_BACKUP_HDR_SIZE))
			goto out;
	} else {
		backup_hdr_encode(&bh, hdr);
		if (emit(&o, hdr, sizeof(hdr)))
			goto out;
	}
	size = inode_obj_size(&to.h);
	a = xmalloc(size);
	b = xmalloc(size);
	if (backup_entries(&(struct backup_ctx){
		    .to = &to, .from = vopt.from_set ? &from : NULL, .o = &o,
		    .a = a, .b = b, .size = size, .sheepdog = sheepdog }))
		goto out;
	memset(end, 0, sizeof(end));
	put_le32(end, BACKUP_END_IDX);
	if (!sheepdog) {
		put_le32(end + 4, o.nr_records);
		put_le32(end + 12, crc32c(o.crc, end, 12));
	}
	if (xwrite(STDOUT_FILENO, end, sizeof(end)) < 0) {
		fprintf(stderr, "Failed to write the backup: %s\n",
			strerror(errno));
		goto out;
	}
	ret = EXIT_SUCCESS;
out:
	free(a);
	free(b);
	free_inode(&to);
	free_inode(&from);
	return ret;
}

/* ---- restore ---- */

struct in_stream {
	int fd;
	int tee;		/* -1, or where a copy of the stream goes */
	uint32_t crc;
};

/* 0, 1 if the stream ended first, -1 on an I/O error */
static int in_read(struct in_stream *s, void *buf, size_t len)
{
	ssize_t r = read_full(s->fd, buf, len);

	if (r < 0) {
		fprintf(stderr, "Failed to read the backup: %s\n",
			strerror(errno));
		return -1;
	}
	if (s->tee >= 0 && r && xwrite(s->tee, buf, (size_t)r) < 0) {
		fprintf(stderr, "Failed to buffer the backup: %s\n",
			strerror(errno));
		return -1;
	}
	s->crc = crc32c(s->crc, buf, (size_t)r);
	return (size_t)r < len ? 1 : 0;
}

static int bad_stream(const char *why)
{
	fprintf(stderr, "Invalid backup stream: %s\n", why);
	return -1;
}

/* Sheepdog's stream: what its header lacks comes from the snapshot */
static int read_sheepdog_header(const uint8_t *b, struct backup_hdr *bh,
				const struct vdi_inode *snap)
{
	if (get_le32(b) != SD_BACKUP_VERSION) {
		fprintf(stderr, "Unsupported backup version %" PRIu32 "\n",
			get_le32(b));
		return -1;
	}
	memset(bh, 0, sizeof(*bh));
	bh->sheepdog = true;
	bh->version = SD_BACKUP_VERSION;
	bh->vdi_size = snap->h.vdi_size;
	/* the inode comes from a sheep: its shift is checked there */
	bh->shift = (uint32_t)__builtin_ctz(inode_obj_size(&snap->h));
	return 0;
}

static int read_header(struct in_stream *s, struct backup_hdr *bh,
		       const struct vdi_inode *snap)
{
	uint8_t b[BACKUP_HDR_SIZE];
	int r = in_read(s, b, SD_BACKUP_HDR_SIZE);

	if (r < 0)
		return -1;
	if (r)
		return bad_stream("it is shorter than its header");
	if (get_le32(b + 4) == SD_BACKUP_MAGIC)
		return read_sheepdog_header(b, bh, snap);
	if (memcmp(b, BACKUP_MAGIC, 8))
		return bad_stream("it is not a backup (bad magic)");
	r = in_read(s, b + SD_BACKUP_HDR_SIZE,
		    BACKUP_HDR_SIZE - SD_BACKUP_HDR_SIZE);
	if (r < 0)
		return -1;
	if (r)
		return bad_stream("it is shorter than its header");
	if (get_le32(b + 36) != crc32c(0, b, 36))
		return bad_stream("the header is corrupt");
	bh->sheepdog = false;
	bh->version = get_le32(b + 8);
	bh->flags = get_le32(b + 12);
	bh->vdi_size = get_le64(b + 16);
	bh->shift = get_le32(b + 24);
	bh->from = get_le32(b + 28);
	bh->to = get_le32(b + 32);
	if (bh->version != BACKUP_VERSION) {
		fprintf(stderr, "Unsupported backup version %" PRIu32 "\n",
			bh->version);
		return -1;
	}
	if (bh->flags)
		return bad_stream("unknown flags");
	if (bh->shift < SD_MIN_BLOCK_SIZE_SHIFT ||
	    bh->shift > KELPIE_MAX_BLOCK_SIZE_SHIFT)
		return bad_stream("invalid object size");
	/* a hyper volume's may pass what a flat index addresses */
	if (bh->vdi_size > SD_MAX_VDI_SIZE)
		return bad_stream("invalid VDI size");
	return 0;
}

/*
 * Read the records after the header.  Without @target only check them;
 * with it, write each into that VDI.  Returns 0 or -1.
 */
static int read_records(struct in_stream *s, const struct backup_hdr *bh,
			struct vdi_inode *target)
{
	uint32_t size = UINT32_C(1) << bh->shift;
	uint64_t nr_objs = DIV_ROUND_UP(bh->vdi_size, (uint64_t)size);
	uint8_t *data = NULL, r[BACKUP_REC_SIZE], extra;
	uint32_t nr = 0, cap = 0;
	int64_t prev = -1;
	int ret = -1, rd;

	for (;;) {
		uint32_t idx, off, len, crc;

		rd = in_read(s, r, 12);
		if (rd)
			goto truncated;
		/* the CRC field of the end record is not part of its CRC */
		crc = s->crc;
		rd = in_read(s, r + 12, 4);
		if (rd)
			goto truncated;
		idx = get_le32(r);
		off = get_le32(r + 4);
		len = get_le32(r + 8);
		if (idx == BACKUP_END_IDX) {
			if (bh->sheepdog ? off || len || get_le32(r + 12) :
			    off != nr || len)
				goto corrupt;
			if (!bh->sheepdog && get_le32(r + 12) != crc) {
				bad_stream("checksum mismatch");
				goto out;
			}
			break;
		}
		if ((int64_t)idx <= prev || idx >= nr_objs || !len ||
		    off > size || len > size - off ||
		    (bh->sheepdog && get_le32(r + 12)))
			goto corrupt;
		/* sized by the records, not the object: most are small */
		if (len > cap) {
			free(data);
			cap = MAX(len, MIN(2 * cap, size));
			data = xmalloc(cap);
		}
		rd = in_read(s, data, len);
		if (rd)
			goto truncated;
		if (!bh->sheepdog && crc32c(0, data, len) != get_le32(r + 12)) {
			bad_stream("checksum mismatch in a data record");
			goto out;
		}
		if (target) {
			if (idx >= inode_nr_objs(&target->h)) {
				bad_stream("a record lies beyond the VDI");
				goto out;
			}
			if (write_chunk(target, idx, data, len, off))
				goto out;
			show_progress((uint64_t)(idx + 1) * size,
				      (uint64_t)inode_nr_objs(&target->h) *
				      size);
		}
		prev = idx;
		nr++;
	}
	/* nothing may follow the end record */
	rd = in_read(s, &extra, 1);
	if (rd < 0)
		goto out;
	if (!rd) {
		bad_stream("data after the end record");
		goto out;
	}
	ret = 0;
	goto out;
truncated:
	if (rd > 0)
		bad_stream("it is truncated");
	goto out;
corrupt:
	bad_stream("a record is corrupt");
out:
	free(data);
	return ret;
}

/* a temporary file that disappears with the process */
static int temp_file(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/dog-restore.XXXXXX",
		 dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "Failed to create a temporary file in %s: "
			"%s\n", dir && *dir ? dir : "/tmp", strerror(errno));
		return -1;
	}
	unlink(path);
	return fd;
}

/*
 * Check the whole stream on stdin.  Returns the descriptor to read it
 * again from (positioned at its start), or -1.
 */
static int verify_stream(const struct vdi_inode *snap, struct backup_hdr *bh)
{
	struct in_stream s = { .fd = STDIN_FILENO, .tee = -1 };
	struct stat st;
	off_t start = 0;
	bool regular;

	if (fstat(STDIN_FILENO, &st)) {
		fprintf(stderr, "Failed to stat stdin: %s\n", strerror(errno));
		return -1;
	}
	regular = S_ISREG(st.st_mode);
	if (regular)
		start = lseek(STDIN_FILENO, 0, SEEK_CUR);
	if (!regular || start < 0) {
		regular = false;
		s.tee = temp_file();
		if (s.tee < 0)
			return -1;
	}
	if (read_header(&s, bh, snap) || read_records(&s, bh, NULL))
		goto fail;
	if ((uint32_t)inode_obj_size(&snap->h) != UINT32_C(1) << bh->shift) {
		fprintf(stderr, "The backup has objects of 2^%" PRIu32 " bytes "
			"but the snapshot of 2^%u\n", bh->shift,
			snap->h.block_size_shift);
		goto fail;
	}
	if (regular) {
		if (lseek(STDIN_FILENO, start, SEEK_SET) < 0)
			goto seek_fail;
		return STDIN_FILENO;
	}
	if (lseek(s.tee, 0, SEEK_SET) < 0)
		goto seek_fail;
	return s.tee;
seek_fail:
	fprintf(stderr, "Failed to rewind the backup: %s\n", strerror(errno));
fail:
	if (s.tee >= 0)
		close(s.tee);
	return -1;
}

/* the size and (living) parent of the current VDI before the restore */
struct old_current {
	uint64_t size;
	uint32_t parent;
};

/* delete the current VDI of @name, if any; returns 0 or -1 */
static int delete_current(const char *name, struct old_current *old)
{
	struct vdi_inode cur;
	struct sd_inode_header ph;
	uint32_t vid;
	int ret = lookup_vdi(name, 0, "", &vid);

	memset(old, 0, sizeof(*old));
	if (ret == SD_RES_NO_VDI)
		return 0;
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to open VDI %s: %s\n", name,
			sd_strerror((uint32_t)ret));
		return -1;
	}
	if (open_vdi_vid(vid, &cur, true))
		return -1;
	old->size = cur.h.vdi_size;
	/* the parent the new current VDI is rebased on must still exist */
	if (cur.h.parent_vdi_id &&
	    read_inode_header(cur.h.parent_vdi_id, &ph) == SD_RES_SUCCESS &&
	    ph.name[0])
		old->parent = cur.h.parent_vdi_id;
	ret = delete_vdi_inode(&cur, name, 0, "");
	free_inode(&cur);
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to delete the current state of %s\n",
			name);
		return -1;
	}
	return 0;
}

int vdi_restore(int argc, char **argv)
{
	const char *name = argv[0];
	struct vdi_inode snap, restored = { 0 };
	struct new_vdi nv = { .name = name };
	struct backup_hdr bh;
	struct old_current old;
	struct in_stream s = { .tee = -1 };
	uint32_t vid, new_vid, cur_vid;
	int fd, ret;

	if (!vopt.snapid && !vopt.tag[0]) {
		fprintf(stderr, "Please specify the '-s' option\n");
		return EXIT_USAGE;
	}
	if (isatty(STDIN_FILENO)) {
		fprintf(stderr, "The backup must come from a pipe or a file\n");
		return EXIT_FAILURE;
	}
	if (lookup_vdi(name, vopt.snapid, vopt.tag, &vid) != SD_RES_SUCCESS) {
		fprintf(stderr, "Snapshot ID %" PRIu32 " or tag %s doesn't "
			"exist\n", vopt.snapid, vopt.tag);
		return EXIT_FAILURE;
	}
	ret = open_vdi_vid(vid, &snap, false);
	if (ret)
		return ret;

	fd = verify_stream(&snap, &bh);
	if (fd < 0)
		return EXIT_FAILURE;
	s.fd = fd;

	/* the stream is sound: now replace the current VDI */
	ret = EXIT_FAILURE;
	if (lookup_vdi(name, 0, "", &cur_vid) == SD_RES_SUCCESS &&
	    refuse_in_use(cur_vid, name, "restore over"))
		goto out;
	if (delete_current(name, &old))
		goto out;
	nv.size = MAX(snap.h.vdi_size, bh.vdi_size);
	nv.base = snap.vid;
	nv.copies = snap.h.nr_copies;
	nv.copy_policy = snap.h.copy_policy;
	nv.store_policy = snap.h.store_policy;
	nv.shift = snap.h.block_size_shift;
	if (new_vdi(&nv, &new_vid) != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to create VDI %s from the snapshot\n",
			name);
		goto out;
	}
	if (open_vdi_vid(new_vid, &restored, true))
		goto undo;
	if (read_header(&s, &bh, &snap) || read_records(&s, &bh, &restored)) {
		fprintf(stderr, "Failed to restore the backup into %s\n",
			name);
		goto undo;
	}

	/*
	 * Freeze the restored VDI as a snapshot; the new current VDI starts
	 * from where the old one did (its parent), or from the restored
	 * data if there was no such parent.
	 */
	nv.size = old.parent ? old.size : restored.h.vdi_size;
	nv.base = old.parent ? old.parent : new_vid;
	nv.snapid = 1;
	ret = new_vdi(&nv, &vid);
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to create the current VDI of %s: %s\n",
			name, sd_strerror((uint32_t)ret));
		ret = EXIT_FAILURE;
		goto out;
	}
	ret = EXIT_SUCCESS;
	goto out;
undo:
	/* open_vdi_vid() left the vid in @restored even if it failed */
	restored.vid = new_vid;
	delete_vdi_inode(&restored, name, 0, "");
out:
	free_inode(&restored);
	if (fd != STDIN_FILENO)
		close(fd);
	return ret;
}
