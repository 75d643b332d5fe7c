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

static char obj_dir[4096];

void store_set_dir(const char *base)
{
	snprintf(obj_dir, sizeof(obj_dir), "%s/obj", base);
}

const char *store_dir(void)
{
	return obj_dir;
}

void store_obj_path(char *buf, size_t len, uint64_t oid)
{
	snprintf(buf, len, "%s/%016" PRIx64, obj_dir, oid);
}

int store_parse_oid(const char *name, uint64_t *oid)
{
	char *end;

	if (strlen(name) != 16)
		return -1;
	*oid = strtoull(name, &end, 16);
	return *end ? -1 : 0;
}

int store_err_to_res(int err)
{
	switch (err) {
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
