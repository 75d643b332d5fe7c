// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the files of store/ share: where the objects live, their names and
 * how a system error becomes an SD_RES_* code.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "store.h"
#include "store_int.h"

/* the first disk's object directory, for messages */
static char first_dir[MD_PATH_MAX + 8];

void store_note_first_dir(void)
{
	md_dir(md_next(-1), first_dir, sizeof(first_dir));
}

const char *store_dir(void)
{
	return first_dir;
}

/* where @k is, or where it would be created */
void store_obj_path(char *buf, size_t len, struct obj_key k)
{
	int slot = md_locate(k);

	md_path(buf, len, slot >= 0 ? slot : md_disk_of(k.oid), k, "");
}

static bool io_error_seen;

bool store_md_io_error_seen(void)
{
	return __atomic_exchange_n(&io_error_seen, false, __ATOMIC_RELAXED);
}

int store_err_to_res(int err)
{
	switch (err) {
	case EIO:
	case EROFS:
	case EBADMSG:	/* EFSBADCRC: a metadata block fails its checksum */
	case EUCLEAN:	/* EFSCORRUPTED */
		/* a disk may be failing: the next check probes them all */
		__atomic_store_n(&io_error_seen, true, __ATOMIC_RELAXED);
		return SD_RES_EIO;
	case ENOENT:
		return SD_RES_NO_OBJ;
	case ENOSPC:
	case EDQUOT:
		return SD_RES_NO_SPACE;
	case EMFILE:
	case ENFILE:
	case EINTR:
	case EAGAIN:
	case EEXIST:
		return SD_RES_NETWORK_ERROR;
	default:
		return SD_RES_EIO;
	}
}
